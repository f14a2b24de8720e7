{{/* Names and labels. */}}
{{- define "skbnf.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "skbnf.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "skbnf.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "skbnf.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "skbnf.selectorLabels" -}}
app.kubernetes.io/name: {{ include "skbnf.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "skbnf.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "skbnf.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: skbnf
{{- end -}}

{{- define "skbnf.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "skbnf.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "skbnf.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* SR-IOV networks in port order (every resource's networks, resources in order). */}}
{{- define "skbnf.sriovNetworks" -}}
{{- $n := list -}}
{{- range .Values.sriov.resources -}}{{- $n = concat $n .networks -}}{{- end -}}
{{- join "," $n -}}
{{- end -}}

{{/* Multus networks (k8s.v1.cni.cncf.io/networks): the SR-IOV networks, else afPacket's or afXdp's. */}}
{{- define "skbnf.networks" -}}
{{- if .Values.sriov.enabled -}}
{{- include "skbnf.sriovNetworks" . -}}
{{- else if .Values.afPacket.enabled -}}
{{- join "," .Values.afPacket.networks -}}
{{- else if .Values.afXdp.enabled -}}
{{- join "," .Values.afXdp.networks -}}
{{- end -}}
{{- end -}}

{{/* Render-time checks the schema cannot express; each fails naming the value to change. */}}
{{- define "skbnf.validate" -}}
{{- if .Values.sriov.enabled -}}
{{- if not .Values.sriov.resources -}}
{{- fail "sriov.resources is empty: list at least one SR-IOV resource ({name, count, networks}) or set sriov.enabled=false" -}}
{{- end -}}
{{- $names := dict -}}
{{- $nets := dict -}}
{{- range $i, $r := .Values.sriov.resources -}}
{{- if hasKey $names $r.name -}}
{{- fail (printf "sriov.resources[%d]: resource %s is listed twice; give it once with the sum of the counts and all its networks" $i $r.name) -}}
{{- end -}}
{{- $_ := set $names $r.name true -}}
{{- $nn := len (default list $r.networks) -}}
{{- if ne (int $r.count) $nn -}}
{{- fail (printf "sriov.resources[%d] (%s): count is %d but %d network(s) are listed %v: list one Multus network per VF (skbnfd names its ports by network), or set count: %d" $i $r.name (int $r.count) $nn (default list $r.networks) $nn) -}}
{{- end -}}
{{- range $r.networks -}}
{{- if hasKey $nets . -}}
{{- fail (printf "sriov.resources[%d] (%s): network %s is listed twice; skbnfd names ports by network, so give each VF a network of its own, or name the interfaces of a network attached twice (%s@net1, %s@net2)" $i $r.name . . .) -}}
{{- end -}}
{{- $_ := set $nets . true -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $attachments := list -}}
{{- if .Values.sriov.enabled -}}{{- $attachments = append $attachments "sriov" -}}{{- end -}}
{{- if .Values.afPacket.enabled -}}{{- $attachments = append $attachments "afPacket" -}}{{- end -}}
{{- if .Values.afXdp.enabled -}}{{- $attachments = append $attachments "afXdp" -}}{{- end -}}
{{- if gt (len $attachments) 1 -}}
{{- fail (printf "%s are enabled together: a pod has one attachment mode; keep one and set the others' enabled=false" (join " and " $attachments)) -}}
{{- end -}}
{{- if .Values.afXdp.enabled -}}
{{- /* --no-huge: EAL's -m is ordinary memory, charged to the container once touched (the
       AF_XDP UMEM pins the pool), so the limit must hold it and the process around it. */ -}}
{{- $m := toString .Values.resources.memory -}}
{{- $mib := 0 -}}
{{- if hasSuffix "Gi" $m -}}{{- $mib = mul (atoi (trimSuffix "Gi" $m)) 1024 -}}
{{- else if hasSuffix "Mi" $m -}}{{- $mib = atoi (trimSuffix "Mi" $m) -}}
{{- end -}}
{{- if ne (int .Values.afXdp.queueCount) (int .Values.dpdk.rxQueues) -}}
{{- fail (printf "afXdp.queueCount is %d but dpdk.rxQueues is %d: skbnfd must poll every AF_XDP socket (frames the kernel puts on an unpolled one are lost); set both to the same number" (int .Values.afXdp.queueCount) (int .Values.dpdk.rxQueues)) -}}
{{- end -}}
{{- $need := add (int .Values.afXdp.ealMemoryMB) 128 -}}
{{- if and (gt (int $mib) 0) (lt (int $mib) (int $need)) -}}
{{- fail (printf "resources.memory %s is less than afXdp.ealMemoryMB (%d MiB, EAL's --no-huge memory) + 128 MiB for the rest of skbnfd: the container would be OOM-killed once the pool fills EAL's memory; set resources.memory to at least %dMi or lower afXdp.ealMemoryMB" $m (int .Values.afXdp.ealMemoryMB) (int $need)) -}}
{{- end -}}
{{- end -}}
{{- if and (eq .Values.kind "DaemonSet") (eq .Values.updateStrategy.type "RollingUpdate") -}}
{{- $ru := default dict .Values.updateStrategy.rollingUpdate -}}
{{- if and (eq (toString (default 0 $ru.maxUnavailable)) "0") (eq (toString (default 0 $ru.maxSurge)) "0") -}}
{{- fail "updateStrategy.rollingUpdate: maxUnavailable and maxSurge are both 0, so a DaemonSet rollout could never progress: set one of them (maxUnavailable: 1 for SR-IOV nodes without spare VFs)" -}}
{{- end -}}
{{- end -}}
{{- include "skbnf.validateAccess" . -}}
{{- include "skbnf.validatePodExtras" . -}}
{{- include "skbnf.validateNonRoot" . -}}
{{- if eq .Values.probes.mode "grpc" -}}
{{- if or (eq (int .Values.probes.port) (int .Values.grpc.port)) (eq (int .Values.probes.port) (int .Values.metrics.port)) -}}
{{- fail (printf "probes.port %d is also grpc.port or metrics.port: the health-only listener needs a port of its own" (int .Values.probes.port)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Render-time checks of the control API's access: remote access only over mTLS with roles. */}}
{{- define "skbnf.validateAccess" -}}
{{- if not (hasPrefix "/" .Values.control.socketDir) -}}
{{- fail (printf "control.socketDir %q is not an absolute path: give the directory of the control socket, e.g. /run/skbnf" .Values.control.socketDir) -}}
{{- end -}}
{{- range $i, $r := .Values.control.roles -}}
{{- if not (regexMatch "^(uid|gid):[0-9]+$" (toString $r.name)) -}}
{{- fail (printf "control.roles[%d].name %q: unix-socket peers are uid:N or gid:N (certificate names go in tls.clientNames)" $i (toString $r.name)) -}}
{{- end -}}
{{- end -}}
{{- if .Values.tls.enabled -}}
{{- if not .Values.tls.clientNames -}}
{{- fail "tls.enabled=true needs tls.clientNames: without them no client certificate gets a role. Write who may do what, e.g.\n  tls:\n    clientNames:\n      - {name: \"dns:ops.example.net\", role: admin}\n      - {name: \"uri:spiffe://cluster.local/ns/monitoring/sa/reader\", role: read}\n(name: a subject alternative name of the client certificate, dns:NAME or uri:URI; role: read, operate or admin)" -}}
{{- end -}}
{{- range $i, $c := .Values.tls.clientNames -}}
{{- if kindIs "string" $c -}}
{{- fail (printf "tls.clientNames[%d] is %q, a bare name: give it a role, e.g. - {name: \"dns:%s\", role: admin} (roles: read, operate, admin; names: dns:NAME or uri:URI)" $i $c $c) -}}
{{- end -}}
{{- if not (regexMatch "^(dns|uri):[^,=\\s]+$" (toString $c.name)) -}}
{{- fail (printf "tls.clientNames[%d].name %q: write dns:NAME or uri:URI (a subject alternative name of the client certificate, no commas or '=')" $i (toString $c.name)) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.tls.clientCA.secretName .Values.tls.clientCA.configMapName -}}
{{- fail "tls.clientCA: secretName and configMapName are both set: the client CA comes from one of them; keep one" -}}
{{- end -}}
{{- if and .Values.tls.certManager.enabled (not .Values.tls.certManager.issuerRef.name) -}}
{{- fail "tls.certManager.enabled=true needs tls.certManager.issuerRef.name: the cert-manager Issuer (kind: Issuer) or ClusterIssuer (kind: ClusterIssuer) that signs the server certificate" -}}
{{- end -}}
{{- end -}}
{{- if and .Values.metrics.tls.enabled (not .Values.metrics.tls.secretName) -}}
{{- fail "metrics.tls.enabled=true needs metrics.tls.secretName: a kubernetes.io/tls Secret with tls.crt, tls.key and ca.crt for /metrics (tls.secretName's will do)" -}}
{{- end -}}
{{- if and .Values.metrics.tls.clientCA.secretName (not .Values.metrics.tls.enabled) -}}
{{- fail "metrics.tls.clientCA.secretName is set but metrics.tls.enabled is false: client certificates are asked for in a TLS handshake; set metrics.tls.enabled=true and metrics.tls.secretName" -}}
{{- end -}}
{{- if and .Values.metrics.tls.clientCA.secretName .Values.serviceMonitor.enabled (not .Values.metrics.tls.clientCertSecretName) -}}
{{- fail "metrics.tls.clientCA.secretName makes skbnfd require a client certificate on /metrics, and the ServiceMonitor has none: set metrics.tls.clientCertSecretName to a kubernetes.io/tls Secret in this namespace with Prometheus' client certificate (tls.crt, tls.key) issued by that CA" -}}
{{- end -}}
{{- end -}}

{{/* Sidecars and extra volumes: kept out of skbnfd's private volumes. */}}
{{- define "skbnf.validatePodExtras" -}}
{{- $private := list "control" "run" "tls" "client-ca" "metrics-tls" "metrics-client-ca" "hugepages" "tmp" -}}
{{- $chart := concat $private (list "config" "podnetinfo") -}}
{{- range $i, $v := .Values.extraVolumes -}}
{{- if has $v.name $chart -}}
{{- fail (printf "extraVolumes[%d]: the name %s is the chart's own volume; name yours differently" $i $v.name) -}}
{{- end -}}
{{- end -}}
{{- range $i, $m := .Values.extraVolumeMounts -}}
{{- if eq (toString $m.name) "control" -}}
{{- fail (printf "extraVolumeMounts[%d] mounts the control socket's volume again; it is mounted at control.socketDir already" $i) -}}
{{- end -}}
{{- end -}}
{{- range $i, $c := .Values.sidecars -}}
{{- range $c.volumeMounts -}}
{{- if has .name $private -}}
{{- fail (printf "sidecars[%d] (%s) mounts volume %s, which only skbnfd may see (the control socket, EAL's runtime directory with the telemetry socket, keys, hugepages); give the sidecar a volume of its own (extraVolumes)" $i $c.name .name) -}}
{{- end -}}
{{- end -}}
{{- if eq $c.name "skbnfd" "preflight" -}}
{{- fail (printf "sidecars[%d]: the name %s is the chart's own container; name yours differently" $i $c.name) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Non-root: Secret files (0440) are root's unless fsGroup owns them. (hugetlbfs needs no
     fsGroup: EAL runs --in-memory, memfd hugepages; it only opens and flocks the mount.) */}}
{{- define "skbnf.validateNonRoot" -}}
{{- if and (ne (int .Values.securityContext.runAsUser) 0) (not .Values.securityContext.fsGroup) -}}
{{- $needs := list -}}
{{- if .Values.tls.enabled -}}{{- $needs = append $needs "the TLS Secret's files (mode 0440)" -}}{{- end -}}
{{- if .Values.metrics.tls.enabled -}}{{- $needs = append $needs "the metrics TLS Secret's files (mode 0440)" -}}{{- end -}}
{{- if $needs -}}
{{- fail (printf "securityContext.runAsUser is %d (non-root) but securityContext.fsGroup is not set: %s would belong to root (mode 0440) and skbnfd could not read them; set securityContext.fsGroup (e.g. %d), which the kubelet gives those volumes" (int .Values.securityContext.runAsUser) (join " and " $needs) (int (ternary .Values.securityContext.runAsGroup .Values.securityContext.runAsUser (ne (int .Values.securityContext.runAsGroup) 0)))) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Sidecars with a restricted securityContext (Pod Security Standards "restricted") under
     what they set themselves; values.schema.json refuses what would undo it. */}}
{{- define "skbnf.sidecars" -}}
{{- $defaults := dict "privileged" false "allowPrivilegeEscalation" false "readOnlyRootFilesystem" true "runAsNonRoot" true "capabilities" (dict "drop" (list "ALL")) -}}
{{- range .Values.sidecars }}
{{- $c := deepCopy . }}
{{- $_ := set $c "securityContext" (merge (deepCopy (default dict $c.securityContext)) $defaults) }}
- {{ toYaml $c | nindent 2 | trim }}
{{- end }}
{{- end -}}

{{/* The control socket (a pod volume only the skbnfd container mounts). */}}
{{- define "skbnf.controlSocket" -}}
{{- printf "%s/control.sock" (trimSuffix "/" .Values.control.socketDir) -}}
{{- end -}}

{{/* host:port on the pod IP (env POD_IP, downward API status.podIP). */}}
{{- define "skbnf.podAddr" -}}
{{- $ := index . 0 -}}
{{- if eq $.Values.podIPFamily "IPv6" -}}
{{- printf "[$(POD_IP)]:%d" (int (index . 1)) -}}
{{- else -}}
{{- printf "$(POD_IP):%d" (int (index . 1)) -}}
{{- end -}}
{{- end -}}

{{/* gRPC listeners: the unix socket, and with TLS the pod IP. */}}
{{- define "skbnf.grpcListen" -}}
{{- printf "unix:%s" (include "skbnf.controlSocket" .) -}}
{{- if .Values.tls.enabled -}}
,{{ include "skbnf.podAddr" (list . .Values.grpc.port) }}
{{- end -}}
{{- end -}}

{{/* --roles: tls.clientNames (dns:/uri:) and control.roles (uid:/gid:), SUBJECT=ROLE. */}}
{{- define "skbnf.roles" -}}
{{- $r := list -}}
{{- if .Values.tls.enabled -}}
{{- range .Values.tls.clientNames -}}{{- $r = append $r (printf "%s=%s" .name .role) -}}{{- end -}}
{{- end -}}
{{- range .Values.control.roles -}}{{- $r = append $r (printf "%s=%s" .name .role) -}}{{- end -}}
{{- join "," $r -}}
{{- end -}}

{{/* Where --tls-client-ca is mounted: the server Secret's ca.crt, or tls.clientCA's own volume. */}}
{{- define "skbnf.clientCAPath" -}}
{{- if or .Values.tls.clientCA.secretName .Values.tls.clientCA.configMapName -}}
{{- printf "/etc/skbnf/client-ca/%s" .Values.tls.clientCA.key -}}
{{- else -}}
/etc/skbnf/tls/ca.crt
{{- end -}}
{{- end -}}

{{- define "skbnf.tlsServerName" -}}
{{- default (printf "%s-grpc.%s.svc" (include "skbnf.fullname" .) .Release.Namespace) .Values.tls.serverName -}}
{{- end -}}

{{/* skbnf_health arguments of the exec probes (probes.mode exec): the control socket. */}}
{{- define "skbnf.probeArgs" -}}
- skbnf_health
- --addr=unix:{{ include "skbnf.controlSocket" . }}
{{- end -}}

{{/* One probe's action: the kubelet's gRPC probe on the health-only port, or skbnf_health. */}}
{{- define "skbnf.probe" -}}
{{- $ := index . 0 -}}
{{- $service := index . 1 -}}
{{- if eq $.Values.probes.mode "grpc" -}}
grpc:
  port: {{ $.Values.probes.port }}
  service: {{ $service }}
{{- else -}}
exec:
  command:
    {{- include "skbnf.probeArgs" $ | nindent 4 }}
    - --service={{ $service }}
{{- end -}}
{{- end -}}

{{/* skbnfd's arguments (flags, then EAL arguments after `--` come from the config file). */}}
{{- define "skbnf.args" -}}
{{- if or .Values.sriov.enabled .Values.afPacket.enabled .Values.afXdp.enabled -}}
- --config=/etc/skbnf/config/skbnfd.conf
{{- end }}
{{- if .Values.sriov.enabled }}
- --pcidevice-env
- --network-status-file=/etc/podnetinfo/network-status
- --network-status-timeout={{ .Values.sriov.networkStatusTimeout }}
{{- end }}
- --listen={{ include "skbnf.grpcListen" . }}
{{- /* loopback is every container of the pod and kubectl port-forward: never an identity,
       not even in skbnfd's demo (no ports configured), which would otherwise grant admin */}}
- --loopback-role=none
{{- with include "skbnf.roles" . }}
- --roles={{ . }}
{{- end }}
{{- if eq .Values.probes.mode "grpc" }}
- --health-listen={{ include "skbnf.podAddr" (list . .Values.probes.port) }}
{{- end }}
- --metrics-addr={{ include "skbnf.podAddr" (list . .Values.metrics.port) }}
{{- if .Values.metrics.tls.enabled }}
- --metrics-tls-cert=/etc/skbnf/metrics-tls/tls.crt
- --metrics-tls-key=/etc/skbnf/metrics-tls/tls.key
{{- with .Values.metrics.tls.clientCA }}{{ if .secretName }}
- --metrics-tls-client-ca=/etc/skbnf/metrics-client-ca/{{ .key }}
{{- end }}{{ end }}
{{- end }}
- --stats=0
{{- if not .Values.preflight.enabled }}
- --skip-preflight
{{- end }}
{{- if .Values.tls.enabled }}
- --tls-cert=/etc/skbnf/tls/tls.crt
- --tls-key=/etc/skbnf/tls/tls.key
- --tls-client-ca={{ include "skbnf.clientCAPath" . }}
{{- end }}
{{- range .Values.dpdk.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}

{{/* Container resources: requests = limits (Guaranteed QoS: exclusive CPUs, hugepages, VFs). */}}
{{- define "skbnf.resources" -}}
{{- $hp := and .Values.hugepages.enabled .Values.sriov.enabled -}}
{{- $r := dict "cpu" (toString .Values.resources.cpu) "memory" .Values.resources.memory -}}
{{- if $hp -}}{{- $_ := set $r (printf "hugepages-%s" .Values.hugepages.size) .Values.hugepages.amount -}}{{- end -}}
{{- if .Values.sriov.enabled -}}
{{- range .Values.sriov.resources -}}{{- $_ := set $r .name (toString .count) -}}{{- end -}}
{{- end -}}
requests:
  {{- toYaml $r | nindent 2 }}
limits:
  {{- toYaml $r | nindent 2 }}
{{- end -}}

{{- define "skbnf.containerSecurityContext" -}}
{{- $caps := list "IPC_LOCK" -}}
{{- if or .Values.afPacket.enabled .Values.afXdp.enabled (and .Values.sriov.enabled (eq .Values.sriov.driver "mlx5")) -}}
{{- $caps = concat $caps (list "NET_RAW" "NET_ADMIN") -}}
{{- end -}}
{{- if .Values.afXdp.enabled -}}
{{- /* net_af_xdp loads and attaches its XDP program (values.yaml afXdp: why each capability) */ -}}
{{- $caps = append $caps "BPF" -}}
{{- end -}}
{{- $caps = concat $caps .Values.extraCapabilities | uniq -}}
privileged: false
allowPrivilegeEscalation: false
readOnlyRootFilesystem: {{ .Values.securityContext.readOnlyRootFilesystem }}
runAsUser: {{ .Values.securityContext.runAsUser }}
runAsGroup: {{ .Values.securityContext.runAsGroup }}
runAsNonRoot: {{ ne (int .Values.securityContext.runAsUser) 0 }}
capabilities:
  drop: [ALL]
  add:
    {{- toYaml $caps | nindent 4 }}
{{- end -}}

{{/* skbnfd's environment: the pod IP it binds to, skbnfctl's address, EAL's runtime dir. */}}
{{- define "skbnf.env" -}}
# --metrics-addr, --health-listen and (TLS) --listen bind the pod IP, never every address
- name: POD_IP
  valueFrom:
    fieldRef: {fieldPath: status.podIP}
# `kubectl exec ... skbnfctl` and skbnf_health find the control socket without --addr
- {name: SKBNF_ADDR, value: "unix:{{ include "skbnf.controlSocket" . }}"}
# EAL's runtime directory is $RUNTIME_DIRECTORY/dpdk/<file prefix> for every uid
# (lib/eal/unix/eal_filesystem.c): /var/run/dpdk/rte, the pod volume "run", where DPDK's
# telemetry socket is /var/run/dpdk/rte/dpdk_telemetry.v2
- {name: RUNTIME_DIRECTORY, value: /var/run}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "skbnf.volumeMounts" -}}
- {name: config, mountPath: /etc/skbnf/config, readOnly: true}
- {name: control, mountPath: {{ .Values.control.socketDir }}}
- {name: run, mountPath: /var/run/dpdk}
- {name: tmp, mountPath: /tmp}
{{- if and .Values.hugepages.enabled .Values.sriov.enabled }}
- {name: hugepages, mountPath: /hugepages}
{{- end }}
{{- if .Values.tls.enabled }}
- {name: tls, mountPath: /etc/skbnf/tls, readOnly: true}
{{- if or .Values.tls.clientCA.secretName .Values.tls.clientCA.configMapName }}
- {name: client-ca, mountPath: /etc/skbnf/client-ca, readOnly: true}
{{- end }}
{{- end }}
{{- if .Values.metrics.tls.enabled }}
- {name: metrics-tls, mountPath: /etc/skbnf/metrics-tls, readOnly: true}
{{- if .Values.metrics.tls.clientCA.secretName }}
- {name: metrics-client-ca, mountPath: /etc/skbnf/metrics-client-ca, readOnly: true}
{{- end }}
{{- end }}
{{- if .Values.sriov.enabled }}
- {name: podnetinfo, mountPath: /etc/podnetinfo, readOnly: true}
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}
