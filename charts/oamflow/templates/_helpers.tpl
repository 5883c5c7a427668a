{{/* Name prefix of every object: the release name. */}}
{{- define "oamflow.name" -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "oamflow.labels" -}}
app.kubernetes.io/name: oamflow
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Labels selecting the controller Pods. */}}
{{- define "oamflow.selectorLabels" -}}
app.kubernetes.io/name: oamflow
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{/* The controller image: repository:tag, pinned with @digest when set. */}}
{{- define "oamflow.image" -}}
{{- $ref := printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- with .Values.image.digest -}}
{{- if not (hasPrefix "sha256:" .) -}}{{- fail (printf "image.digest must be sha256:<hex>, got %q" .) -}}{{- end -}}
{{- $ref = printf "%s@%s" $ref . -}}
{{- end -}}
{{- $ref -}}
{{- end -}}
