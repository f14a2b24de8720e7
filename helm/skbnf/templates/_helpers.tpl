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
{{- if eq .Values.probes.mode "grpc" -}}
{{- if or (eq (int .Values.probes.port) (int .Values.grpc.port)) (eq (int .Values.probes.port) (int .Values.metrics.port)) -}}
{{- fail (printf "probes.port %d is also grpc.port or metrics.port: the health-only listener needs a port of its own" (int .Values.probes.port)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* gRPC listener: loopback plaintext, or the pod IP with TLS. */}}
{{- define "skbnf.grpcListen" -}}
{{- if .Values.tls.enabled -}}
{{- printf "0.0.0.0:%d" (int .Values.grpc.port) -}}
{{- else -}}
{{- printf "127.0.0.1:%d" (int .Values.grpc.port) -}}
{{- end -}}
{{- end -}}

{{- define "skbnf.tlsServerName" -}}
{{- default (printf "%s-grpc.%s.svc" (include "skbnf.fullname" .) .Release.Namespace) .Values.tls.serverName -}}
{{- end -}}

{{/* skbnf_health arguments of the exec probes (probes.mode exec). */}}
{{- define "skbnf.probeArgs" -}}
- skbnf_health
- --addr=127.0.0.1:{{ .Values.grpc.port }}
{{- if .Values.tls.enabled }}
- --tls-ca=/etc/skbnf/tls/ca.crt
- --tls-server-name={{ include "skbnf.tlsServerName" . }}
{{- end }}
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
{{- if eq .Values.probes.mode "grpc" }}
- --health-listen=0.0.0.0:{{ .Values.probes.port }}
{{- end }}
- --metrics-addr=:{{ .Values.metrics.port }}
- --stats=0
{{- if not .Values.preflight.enabled }}
- --skip-preflight
{{- end }}
{{- if .Values.tls.enabled }}
- --tls-cert=/etc/skbnf/tls/tls.crt
- --tls-key=/etc/skbnf/tls/tls.key
- --tls-client-ca=/etc/skbnf/tls/ca.crt
{{- with .Values.tls.clientNames }}
- --tls-client-names={{ join "," . }}
{{- end }}
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
privileged: false
allowPrivilegeEscalation: false
readOnlyRootFilesystem: {{ .Values.securityContext.readOnlyRootFilesystem }}
runAsUser: {{ .Values.securityContext.runAsUser }}
runAsGroup: {{ .Values.securityContext.runAsGroup }}
runAsNonRoot: {{ ne (int .Values.securityContext.runAsUser) 0 }}
capabilities:
  drop: [ALL]
  add:
    - IPC_LOCK
    {{- if or .Values.afPacket.enabled .Values.afXdp.enabled (and .Values.sriov.enabled (eq .Values.sriov.driver "mlx5")) }}
    - NET_RAW
    - NET_ADMIN
    {{- end }}
    {{- if .Values.afXdp.enabled }}
    # net_af_xdp loads and attaches its XDP program (values.yaml afXdp: why each capability)
    - BPF
    {{- end }}
    {{- range .Values.extraCapabilities }}
    - {{ . }}
    {{- end }}
{{- end -}}

{{- define "skbnf.volumeMounts" -}}
- {name: config, mountPath: /etc/skbnf/config, readOnly: true}
- {name: run, mountPath: /var/run/dpdk}
- {name: tmp, mountPath: /tmp}
{{- if and .Values.hugepages.enabled .Values.sriov.enabled }}
- {name: hugepages, mountPath: /hugepages}
{{- end }}
{{- if .Values.tls.enabled }}
- {name: tls, mountPath: /etc/skbnf/tls, readOnly: true}
{{- end }}
{{- if .Values.sriov.enabled }}
- {name: podnetinfo, mountPath: /etc/podnetinfo, readOnly: true}
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}
