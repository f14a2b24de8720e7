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

{{/* Multus networks: explicit list, else one NAD attachment per VF (SR-IOV), else afPacket's. */}}
{{- define "skbnf.networks" -}}
{{- if .Values.sriov.enabled -}}
{{- if .Values.sriov.networks -}}
{{- join "," .Values.sriov.networks -}}
{{- else -}}
{{- $n := list -}}
{{- range until (int .Values.sriov.count) -}}{{- $n = append $n $.Values.sriov.networkAttachmentDefinition.name -}}{{- end -}}
{{- join "," $n -}}
{{- end -}}
{{- else if .Values.afPacket.enabled -}}
{{- join "," .Values.afPacket.networks -}}
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

{{/* skbnf_health arguments of the probes. */}}
{{- define "skbnf.probeArgs" -}}
- skbnf_health
- --addr=127.0.0.1:{{ .Values.grpc.port }}
{{- if .Values.tls.enabled }}
- --tls-ca=/etc/skbnf/tls/ca.crt
- --tls-server-name={{ include "skbnf.tlsServerName" . }}
{{- end }}
{{- end -}}

{{/* skbnfd's arguments (flags, then EAL arguments after `--` come from the config file). */}}
{{- define "skbnf.args" -}}
{{- if or .Values.sriov.enabled .Values.afPacket.enabled -}}
- --config=/etc/skbnf/config/skbnfd.conf
{{- end }}
{{- if .Values.sriov.enabled }}
- --pcidevice-env
{{- end }}
- --listen={{ include "skbnf.grpcListen" . }}
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
{{- if .Values.sriov.enabled -}}{{- $_ := set $r .Values.sriov.resourceName (toString .Values.sriov.count) -}}{{- end -}}
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
    {{- if .Values.afPacket.enabled }}
    - NET_RAW
    - NET_ADMIN
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
{{- end -}}
