# SPDX-License-Identifier: BSD-3-Clause
"""Pod Security Standards, the "baseline" and "restricted" policies, as checks on a PodSpec.

The rule list and each rule's restricted fields and allowed values are the Kubernetes
documentation's, kubernetes.io/docs/concepts/security/pod-security-standards/ (the
pod-security admission controller, k8s.io/pod-security-admission/policy, implements the same
list):

  baseline   HostProcess, Host Namespaces, Privileged Containers, Capabilities (add only
             AUDIT_WRITE CHOWN DAC_OVERRIDE FOWNER FSETID KILL MKNOD NET_BIND_SERVICE SETFCAP
             SETGID SETPCAP SETUID SYS_CHROOT), HostPath Volumes, Host Ports, AppArmor,
             SELinux, /proc Mount Type, Seccomp (not Unconfined), Sysctls (the safe set)
  restricted everything of baseline, and Volume Types (configMap csi downwardAPI emptyDir
             ephemeral persistentVolumeClaim projected secret), Privilege Escalation (false),
             Running as Non-root (runAsNonRoot true, pod or every container), Running as
             Non-root user (runAsUser not 0), Seccomp (RuntimeDefault or Localhost, pod or
             every container), Capabilities (drop ALL; add only NET_BIND_SERVICE)

violations(spec, level) returns (rule, where) pairs; "where" names the container or volume.
Linux rules only (Windows pods: HostProcess only).
"""

BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                 "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                      "persistentVolumeClaim", "projected", "secret"}
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
                "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies",
                "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
SELINUX_TYPES = {"container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
LEVELS = ("baseline", "restricted")


def containers(spec):
    for kind in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(kind) or []:
            yield c


def _baseline(spec):
    out = []
    psc = spec.get("securityContext") or {}
    if (psc.get("windowsOptions") or {}).get("hostProcess"):
        out.append(("HostProcess", "pod"))
    for ns in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(ns):
            out.append(("Host Namespaces", ns))
    for v in spec.get("volumes") or []:
        if "hostPath" in v:
            out.append(("HostPath Volumes", v["name"]))
    for s in psc.get("sysctls") or []:
        if s.get("name") not in SAFE_SYSCTLS:
            out.append(("Sysctls", s.get("name")))
    scs = [("pod", psc)] + [(c["name"], c.get("securityContext") or {}) for c in containers(spec)]
    for where, sc in scs:
        if (sc.get("seccompProfile") or {}).get("type") == "Unconfined":
            out.append(("Seccomp", where))
        if (sc.get("appArmorProfile") or {}).get("type") == "Unconfined":
            out.append(("AppArmor", where))
        se = sc.get("seLinuxOptions") or {}
        if se.get("type") not in (None, "", *SELINUX_TYPES) or se.get("user") or se.get("role"):
            out.append(("SELinux", where))
    for c in containers(spec):
        sc = c.get("securityContext") or {}
        if (sc.get("windowsOptions") or {}).get("hostProcess"):
            out.append(("HostProcess", c["name"]))
        if sc.get("privileged"):
            out.append(("Privileged Containers", c["name"]))
        if set((sc.get("capabilities") or {}).get("add") or []) - BASELINE_CAPS:
            out.append(("Capabilities", c["name"]))
        if any(p.get("hostPort") for p in c.get("ports") or []):
            out.append(("Host Ports", c["name"]))
        if sc.get("procMount") not in (None, "Default"):
            out.append(("/proc Mount Type", c["name"]))
    return out


def _restricted(spec):
    out = []
    psc = spec.get("securityContext") or {}
    for v in spec.get("volumes") or []:
        if not set(v) - {"name"} <= RESTRICTED_VOLUMES:
            out.append(("Volume Types", v["name"]))
    for c in containers(spec):
        sc = c.get("securityContext") or {}
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(("Privilege Escalation", c["name"]))
        non_root = sc.get("runAsNonRoot", psc.get("runAsNonRoot"))
        if non_root is not True:
            out.append(("Running as Non-root", c["name"]))
        if sc.get("runAsUser", psc.get("runAsUser")) == 0:
            out.append(("Running as Non-root user", c["name"]))
        seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(("Seccomp", c["name"]))
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []) or set(caps.get("add") or []) - {
                "NET_BIND_SERVICE"}:
            out.append(("Capabilities", c["name"]))
    if psc.get("runAsUser") == 0:
        out.append(("Running as Non-root user", "pod"))
    return out


def violations(spec, level):
    """(rule, where) of every rule of `level` ("baseline" or "restricted") the PodSpec breaks."""
    assert level in LEVELS, level
    out = _baseline(spec)
    if level == "restricted":
        out += _restricted(spec)
    return sorted(set(out))
