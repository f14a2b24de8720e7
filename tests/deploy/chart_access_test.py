#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""deploy.chart_access: skbnfd started with the control flags the chart renders, and who can
change the data plane then (issue 31 item 2).

Each case renders the chart (`helm template --kube-version 1.29.0`), takes the skbnfd
container's args and env from the rendered workload, and starts the real skbnfd with them:
  - the pod is simulated on this host: every volumeMount's mountPath P becomes <tmp>P (the
    test writes the files a volume would hold, e.g. the TLS Secret's tls.crt/tls.key), and the
    downward API's POD_IP is 127.0.0.1 (so the pod-IP listeners are on loopback here, which
    makes the "port-forward" checks harder than in a pod: there they are not on loopback at
    all);
  - the data-plane flags (--config, --pcidevice-env, --network-status-*: an SR-IOV node) are
    left out, so skbnfd runs its embedded demo; every control-plane flag is the render's;
  - ports are chosen free (grpc.port, probes.port, metrics.port values) so parallel tests do
    not collide.
Then, with skbnfctl (exit 1 and "skbnfctl: CODE: message" on a failed call):
  default render: `skbnfctl strategy set` with the container's own SKBNF_ADDR (the unix socket)
    works as skbnfd's uid (what `kubectl exec` runs as); another uid (setpriv) cannot change
    anything; a plaintext SetStrategy from 127.0.0.1 to every TCP port of the pod (what
    `kubectl port-forward` reaches) changes nothing; DPDK's telemetry socket is in the volume
    "run" (EAL's runtime dir from RUNTIME_DIRECTORY) and dpdk-telemetry.py, with the
    container's environment, queries it;
  the pre-issue loopback listener added back (--listen=...,127.0.0.1:P, as the old chart
    rendered): a plaintext SetStrategy from 127.0.0.1 is PERMISSION_DENIED;
  TLS render with a client CA of its own (tls.clientCA) and tls.clientNames: plaintext fails,
    no client certificate or an unlisted name is PERMISSION_DENIED, a read name may read but
    not SetStrategy, the admin name may; a certificate from the server's CA is refused.
Certificates: openssl, as tests/deploy/health_probe_test.sh makes them.
Environment: SKBNFD, SKBNFCTL (ctest), SKBNF_NODE_DIR (helm).
"""

import glob
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request

import helm_test as h

SKBNFD = os.environ.get("SKBNFD", "")
SKBNFCTL = os.environ.get("SKBNFCTL", "")
TELEMETRY = "/usr/bin/dpdk-telemetry.py"  # Debian's dpdk package (deploy/deps.sh)
DATA_PLANE_FLAGS = ("--config=", "--pcidevice-env", "--network-status-file=",
                    "--network-status-timeout=")
SERVER_NAME = "rel-skbnf-grpc.net.svc"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def openssl(d, *args):
    subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)


def make_ca(d, name):
    openssl(d, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", name + ".key", "-out", name + ".crt", "-days", "2",
            "-subj", "/CN=" + name)


def make_cert(d, name, ca, san, usage):
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write("subjectAltName=%s\nextendedKeyUsage=%s\n" % (san, usage))
    openssl(d, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + name)
    openssl(d, "x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
            "-CAcreateserial", "-days", "2", "-extfile", name + ".ext", "-out", name + ".crt")


class Pod:
    """skbnfd started as the rendered skbnfd container would be, volumes under a temp root."""

    def __init__(self, test, *sets, extra_listen=None, files=None, values=None, prefix=(),
                 keep=(), before_start=None):
        self.root = tempfile.mkdtemp(prefix="skbnf-access-")
        os.chmod(self.root, 0o755)
        test.addCleanup(shutil.rmtree, self.root, True)
        self.ports = {"grpc": free_port(), "health": free_port(), "metrics": free_port()}
        self.docs = h.render(values, "grpc.port=%d" % self.ports["grpc"],
                             "probes.port=%d" % self.ports["health"],
                             "metrics.port=%d" % self.ports["metrics"], *sets)
        _, self.spec, c = h.container(self.docs)
        self.container = c
        for m in c["volumeMounts"]:
            os.makedirs(self.path(m["mountPath"]), exist_ok=True)
            os.chmod(self.path(m["mountPath"]), 0o777)  # emptyDir's mode (empty_dir.go)
        for rel, src in (files or {}).items():
            shutil.copy(src, self.path(rel))
        env = {e["name"]: e["value"] for e in c["env"] if "value" in e}
        self.env = {k: self.subst(v) for k, v in env.items()}
        args = [self.subst(a) for a in c["args"]
                if not a.startswith(DATA_PLANE_FLAGS) or a.startswith(keep)]
        if extra_listen:
            args = [a + "," + extra_listen if a.startswith("--listen=") else a for a in args]
        self.args = args
        self.ready = self.path("/tmp/ready.json")  # the pod volume tmp: any uid may write
        self.log = open(os.path.join(self.root, "skbnfd.log"), "w+")
        test.addCleanup(self.log.close)
        if before_start:
            before_start(self)
        env = dict(os.environ, **self.env)
        self.proc = subprocess.Popen([*prefix, SKBNFD, *args, "--ready-file=" + self.ready],
                                     env=env, stdout=self.log, stderr=subprocess.STDOUT)
        test.addCleanup(self.stop)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not os.path.exists(self.ready):
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(self.ready):
            raise AssertionError("skbnfd %s did not start:\n%s" % (" ".join(args), self.text()))

    def path(self, p):
        return self.root + p

    def subst(self, v):
        """$(POD_IP) -> 127.0.0.1; the pod's absolute mount paths -> under the temp root."""
        v = v.replace("$(POD_IP)", "127.0.0.1")
        paths = sorted((m["mountPath"] for m in self.container["volumeMounts"]), key=len,
                       reverse=True)
        v = re.sub(r"(^|[=,:])(" + "|".join(map(re.escape, paths)) + r")(?=/|,|$)",
                   lambda x: x.group(1) + self.path(x.group(2)), v)  # one pass
        if v == "/var/run":  # RUNTIME_DIRECTORY: EAL adds /dpdk, the volume "run"
            v = self.path(v)
        return v

    def text(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def metrics(self):
        url = "http://127.0.0.1:%d/metrics" % self.ports["metrics"]
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.read().decode()

    def strategy(self):
        for line in self.metrics().splitlines():
            if line.startswith("skbnf_strategy_info{") and line.endswith(" 1"):
                return line.split('spec="', 1)[1].split('"', 1)[0]
        return None


def ctl(*args, env=None, prefix=()):
    p = subprocess.run([*prefix, SKBNFCTL, "--timeout=5", *args], capture_output=True,
                       text=True, timeout=60, env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout + p.stderr


class ChartAccessTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for name, path in (("SKBNFD", SKBNFD), ("SKBNFCTL", SKBNFCTL), ("helm", h.HELM),
                           ("dpdk-telemetry.py", TELEMETRY)):
            if not path or not os.access(path, os.X_OK):
                raise RuntimeError("%s is not an executable: %r" % (name, path))

    def wait_strategy(self, pod, want):
        deadline = time.monotonic() + 10
        got = None
        while time.monotonic() < deadline:
            got = pod.strategy()
            if got == want:
                return
            time.sleep(0.1)
        self.fail("strategy %s, want %s" % (got, want))

    def test_default_render_socket_only(self):
        pod = Pod(self)
        args = " ".join(pod.container["args"])
        self.assertIn("--listen=unix:/run/skbnf/control.sock", args)
        start = pod.strategy()
        self.assertTrue(start)
        sock = pod.path("/run/skbnf/control.sock")
        self.assertTrue(os.path.exists(sock), pod.text())
        self.assertEqual(pod.env["SKBNF_ADDR"], "unix:" + sock)
        # what `kubectl exec ... skbnfctl` runs: skbnfd's uid, the container's SKBNF_ADDR
        rc, out = ctl("strategy", "set", "recycle+magazine", env={"SKBNF_ADDR": pod.env[
            "SKBNF_ADDR"]})
        self.assertEqual(rc, 0, out + pod.text())
        self.wait_strategy(pod, "recycle+magazine")
        # another uid on the socket (a sidecar could not even see the volume): nothing changes
        rc, out = ctl("--addr=" + pod.env["SKBNF_ADDR"], "strategy", "set", "magazine",
                      prefix=("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"))
        self.assertNotEqual(rc, 0, out)
        # kubectl port-forward reaches the pod's TCP ports on loopback: plaintext SetStrategy
        # to each changes nothing (grpc.port has no listener, the health port serves
        # grpc.health.v1 only, /metrics is HTTP)
        for name, port in pod.ports.items():
            rc, out = ctl("--addr=127.0.0.1:%d" % port, "strategy", "set", "magazine")
            self.assertEqual(rc, 1, (name, out))
            self.assertRegex(out, r"skbnfctl: (UNAVAILABLE|UNIMPLEMENTED|PERMISSION_DENIED|"
                                  r"INTERNAL|UNKNOWN)", name)
        self.assertEqual(pod.strategy(), "recycle+magazine")
        # DPDK's telemetry socket in the volume "run" (EAL's runtime directory,
        # $RUNTIME_DIRECTORY/dpdk/<prefix>, lib/eal/unix/eal_filesystem.c), where DPDK's own
        # client finds it with the container's environment (usertools/dpdk-telemetry.py reads
        # RUNTIME_DIRECTORY too); the demo's file prefix is skbnfd-demo-<pid> (the chart's
        # config keeps EAL's default, rte)
        socks = glob.glob(pod.path("/var/run/dpdk/*/dpdk_telemetry.v2"))
        self.assertEqual(len(socks), 1, "telemetry socket under %s: %s" % (
            pod.path("/var/run/dpdk"), os.listdir(pod.path("/var/run/dpdk"))))
        prefix = os.path.basename(os.path.dirname(socks[0]))
        p = subprocess.run([TELEMETRY, "-f", prefix], input="/eal/params\n", text=True,
                           capture_output=True, timeout=30,
                           env=dict(os.environ, RUNTIME_DIRECTORY=pod.env["RUNTIME_DIRECTORY"]))
        self.assertEqual(p.returncode, 0, p.stderr)
        reply = json.loads(p.stdout)
        self.assertIn("--file-prefix=" + prefix, reply["/eal/params"])

    def test_loopback_tcp_grants_no_role(self):
        # the pre-issue chart's listener, added back: loopback is not an identity
        port = free_port()
        pod = Pod(self, extra_listen="127.0.0.1:%d" % port)
        start = pod.strategy()
        rc, out = ctl("--addr=127.0.0.1:%d" % port, "strategy", "set", "recycle+magazine")
        self.assertEqual(rc, 1, out + pod.text())
        self.assertIn("skbnfctl: PERMISSION_DENIED", out)
        # skbnfctl asks GetInfo first: loopback has not even read
        self.assertIn("needs role", out)
        self.assertIn("loopback TCP 127.0.0.1 has none", out)
        self.assertEqual(pod.strategy(), start)

    def test_tls_render_roles_from_client_certificates(self):
        d = tempfile.mkdtemp(prefix="skbnf-access-pki-")
        self.addCleanup(shutil.rmtree, d, True)
        make_ca(d, "server-ca")
        make_ca(d, "client-ca")
        make_cert(d, "server", "server-ca", "DNS:" + SERVER_NAME, "serverAuth")
        make_cert(d, "ops", "client-ca", "DNS:ops.example.net", "clientAuth")
        make_cert(d, "reader", "client-ca", "URI:spiffe://cluster.local/ns/mon/sa/reader",
                  "clientAuth")
        make_cert(d, "other", "client-ca", "DNS:other.example.net", "clientAuth")
        make_cert(d, "ops-server-ca", "server-ca", "DNS:ops.example.net", "clientAuth")
        files = {"/etc/skbnf/tls/tls.crt": os.path.join(d, "server.crt"),
                 "/etc/skbnf/tls/tls.key": os.path.join(d, "server.key"),
                 "/etc/skbnf/tls/ca.crt": os.path.join(d, "server-ca.crt"),
                 "/etc/skbnf/client-ca/ca.crt": os.path.join(d, "client-ca.crt")}
        pod = Pod(self, "tls.enabled=true", "tls.secretName=skbnf-grpc-tls",
                  "tls.clientCA.secretName=skbnf-client-ca",
                  "tls.clientNames[0].name=dns:ops.example.net", "tls.clientNames[0].role=admin",
                  "tls.clientNames[1].name=uri:spiffe://cluster.local/ns/mon/sa/reader",
                  "tls.clientNames[1].role=read", files=files)
        addr = "--addr=127.0.0.1:%d" % pod.ports["grpc"]
        tls = [addr, "--tls-ca=" + os.path.join(d, "server-ca.crt"),
               "--tls-server-name=" + SERVER_NAME]

        def cert(name):
            return ["--tls-cert=" + os.path.join(d, name + ".crt"),
                    "--tls-key=" + os.path.join(d, name + ".key")]
        start = pod.strategy()
        rc, out = ctl(addr, "strategy", "set", "recycle+magazine")  # plaintext
        self.assertEqual(rc, 1, out)
        self.assertIn("skbnfctl: UNAVAILABLE", out)
        for who, extra in (("no client certificate", []), ("unlisted name", cert("other")),
                           ("read role", cert("reader"))):
            rc, out = ctl(*tls, *extra, "strategy", "set", "recycle+magazine")
            self.assertEqual(rc, 1, (who, out, pod.text()))
            self.assertIn("skbnfctl: PERMISSION_DENIED", out, who)
        self.assertEqual(pod.strategy(), start)
        rc, out = ctl(*tls, *cert("reader"), "info")
        self.assertEqual(rc, 0, out)
        # a certificate from the server's issuer: not the client CA, refused
        rc, out = ctl(*tls, *cert("ops-server-ca"), "strategy", "set", "recycle+magazine")
        self.assertEqual(rc, 1, out)
        self.assertEqual(pod.strategy(), start)
        rc, out = ctl(*tls, *cert("ops"), "strategy", "set", "recycle+magazine")
        self.assertEqual(rc, 0, out + pod.text())
        self.wait_strategy(pod, "recycle+magazine")
        # the socket still works for the container's own uid
        rc, out = ctl("--addr=" + pod.env["SKBNF_ADDR"], "strategy", "set", "magazine")
        self.assertEqual(rc, 0, out)
        self.wait_strategy(pod, "magazine")


class NonRootTest(unittest.TestCase):
    """The non-root render (tests/deploy/helm/sidecars.yaml: uid/gid 10001, fsGroup 10001,
    supplementalGroups [2001]) on hugepages as the kubelet hands them in: a hugetlbfs mount
    (pagesize=2M) owned by root, as pkg/volume/emptydir/empty_dir.go setupHugepages mounts it
    (the fsGroup ownership it then applies is left out here, to show it is not needed: EAL runs
    --in-memory, memfd_create(MFD_HUGETLB) pages, lib/eal/linux/eal_memalloc.c). skbnfd runs as
    uid 10001 with no capabilities at all and no_new_privs (setpriv), which is what a non-root
    Kubernetes container gets of its capabilities.add. Its pages are hugepages, skbnfctl as
    the same uid swaps the strategy over the socket, and the preflight names the memlock risk
    (no IPC_LOCK, the runtime's memlock limit) without refusing (no vfio here). The pages are
    the test's own: vm.nr_hugepages + 192, given back after."""

    PAGES = 192  # 384 MiB: l3 mode's LPM table (64 MiB tbl24), the pool, rings

    def setUp(self):
        for name, path in (("SKBNFD", SKBNFD), ("SKBNFCTL", SKBNFCTL), ("helm", h.HELM)):
            if not path or not os.access(path, os.X_OK):
                raise RuntimeError("%s is not an executable: %r" % (name, path))
        # hugepages for this test, given back after (the suite's rule: nr_hugepages + N;
        # skbnfd's preflight counts only free persistent pages, not surplus ones)
        self.knob = "/proc/sys/vm/nr_hugepages"
        with open(self.knob) as f:
            n = int(f.read())
        with open(self.knob, "w") as f:
            f.write(str(n + self.PAGES))
        self.addCleanup(self.give_back)

    def give_back(self):
        with open(self.knob) as f:
            n = int(f.read())
        with open(self.knob, "w") as f:
            f.write(str(max(n - self.PAGES, 0)))

    def test_non_root_on_a_root_owned_hugetlbfs(self):
        uid = 10001

        def mount_hugepages(pod):
            d = pod.path("/hugepages")
            subprocess.run(["mount", "-t", "hugetlbfs", "-o", "pagesize=2M", "nodev", d],
                           check=True)
            self.addCleanup(subprocess.run, ["umount", d])
            st = os.stat(d)
            self.assertEqual((st.st_uid, oct(st.st_mode & 0o7777)), (0, "0o755"))
            # the rendered ConfigMap, with two net_null ports for the SR-IOV VFs
            (cm,) = [x for x in pod.docs if x["kind"] == "ConfigMap"]
            conf = cm["data"]["skbnfd.conf"]
            self.assertIn("eal --in-memory --huge-dir=/hugepages\n", conf)
            conf = re.sub(r"^port net=.*\n", "", conf, flags=re.M).replace(
                "--huge-dir=/hugepages", "--huge-dir=" + d)
            conf += ("eal --no-pci --vdev=net_null0 --vdev=net_null1"
                     " --file-prefix=skbnf-nonroot-%d\n" % os.getpid())
            conf += "port net_null0 peer=net_null1\nport net_null1 peer=net_null0\nmbufs 8192\n"
            path = pod.path("/etc/skbnf/config/skbnfd.conf")
            with open(path, "w") as f:
                f.write(conf)
            os.chmod(path, 0o644)

        pod = Pod(self, values="sidecars.yaml", keep=("--config=",),
                  prefix=("setpriv", "--reuid=%d" % uid, "--regid=%d" % uid,
                          "--groups=%d,2001" % uid, "--inh-caps=-all", "--bounding-set=-all",
                          "--no-new-privs"),
                  before_start=mount_hugepages)
        sc = pod.container["securityContext"]
        self.assertEqual((sc["runAsUser"], sc["runAsNonRoot"]), (uid, True))
        with open("/proc/%d/status" % pod.proc.pid) as f:
            status = f.read()
        self.assertRegex(status, r"Uid:\s+%d\s" % uid)
        self.assertRegex(status, r"CapEff:\s+0+\n")
        with open("/proc/%d/smaps" % pod.proc.pid) as f:
            huge = f.read().count("KernelPageSize:     2048 kB")
        self.assertGreater(huge, 0, "no 2 MiB mappings: EAL did not use the hugepages\n" +
                           pod.text())
        self.assertIn("memlock", pod.text())  # the preflight's risk line, not a refusal
        as_uid = ("setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups")
        rc, out = ctl("--addr=" + pod.env["SKBNF_ADDR"], "strategy", "set", "recycle+magazine",
                      prefix=as_uid)
        self.assertEqual(rc, 0, out + pod.text())
        deadline = time.monotonic() + 10
        while pod.strategy() != "recycle+magazine" and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(pod.strategy(), "recycle+magazine")


if __name__ == "__main__":
    unittest.main(verbosity=2)
