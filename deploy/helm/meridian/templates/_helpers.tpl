{{/* The app name: the chart name or nameOverride. */}}
{{- define "meridian.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The object name prefix: fullnameOverride, else the release name when it
contains the app name (release "meridian" gives the names of
deploy/kustomize), else "<release>-<name>".
*/}}
{{- define "meridian.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "meridian.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "meridian.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Selector labels: immutable in a Deployment, so only the name and the
instance, as deploy/kustomize selects by app.kubernetes.io/name only.
*/}}
{{- define "meridian.selectorLabels" -}}
app.kubernetes.io/name: {{ include "meridian.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "meridian.labels" -}}
{{ include "meridian.selectorLabels" . }}
app.kubernetes.io/version: {{ include "meridian.tag" . | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/part-of: meridian
app.kubernetes.io/component: gslb
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "meridian.chart" . }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "meridian.tag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{/* repository:tag, or repository:tag@digest when a digest is set. */}}
{{- define "meridian.image" -}}
{{- $img := printf "%s:%s" .Values.image.repository (include "meridian.tag" .) }}
{{- if .Values.image.digest }}
{{- $img = printf "%s@%s" $img .Values.image.digest }}
{{- end }}
{{- $img }}
{{- end }}

{{- define "meridian.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "meridian.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The ServiceAccount as an RBAC subject. */}}
{{- define "meridian.subject" -}}
- kind: ServiceAccount
  name: {{ include "meridian.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end }}
