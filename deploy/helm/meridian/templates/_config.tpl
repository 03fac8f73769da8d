{{/*
The Meridian config file rendered from the structured values: a dict built
here, `extraConfig` merged over it (mergeOverwrite), then toYaml. The
fields are those of docs/configuration.md. Argument: a dict with "root"
(the top context) and "advertise" ("" for the file every pod shares, else
the ring.advertise of one pod: gossip.expose NodePort).
*/}}
{{- define "meridian.config" -}}
{{- $ := .root }}
{{- $v := $.Values }}
{{- $fullname := include "meridian.fullname" $ }}
{{- $zone := include "meridian.zone" $ }}
{{- $site := include "meridian.siteName" $ }}
{{- $region := required "site.region is required: the region this site's probers vote from, e.g. us-east (or set `config`, the whole config file)" $v.site.region }}
{{- $lb := eq $v.service.dns.type "LoadBalancer" }}

{{- $server := dict
  "dns" (dict "listen" (list "0.0.0.0:5353"))
  "http" (dict "listen" "0.0.0.0:8080" "probe_listen" "0.0.0.0:8081")
  "log" (dict "format" "json" "level" "info")
  "state_dir" "/var/lib/meridian" }}
{{- if $v.admin.tokensSecret }}
{{- $_ := set $server "admin" (dict "token_file" "/etc/meridian/admin/tokens") }}
{{- end }}

{{- $z := dict "apex" $zone "ring" (dict "names" true "nameservers" $lb) }}
{{- if $v.nameservers }}
{{- $_ := set $z "nameservers" (deepCopy $v.nameservers) }}
{{- else if not $lb }}
{{- fail (printf "nameservers is required with service.dns.type %s: the zone's NS names and their glue (only a LoadBalancer DNS Service has an address Meridian can read and serve as ns-%s.%s)" $v.service.dns.type $site $zone) }}
{{- end }}
{{- if $v.delegation }}
{{- $_ := set $z "delegation" (deepCopy $v.delegation) }}
{{- end }}
{{- if $v.dnssec.secret }}
{{- if $v.dnssec.keys }}
{{- $files := list }}
{{- range $v.dnssec.keys }}
{{- $files = append $files (printf "/etc/meridian/dnssec/%s.private" .) }}
{{- end }}
{{- $_ := set $z "dnssec" (dict "key_files" $files) }}
{{- else }}
{{- $_ := set $z "dnssec" (dict "key_directory" "/etc/meridian-dnssec") }}
{{- end }}
{{- end }}

{{- $seeds := $v.ring.seeds }}
{{- if not $seeds }}
{{- $seeds = list (printf "ring.%s:%d" $zone (int $v.gossip.port)) (printf "%s-gossip.%s.svc.cluster.local:7946" $fullname $.Release.Namespace) }}
{{- end }}
{{- $ca := list "/etc/meridian/ring/ca.crt" }}
{{- if include "meridian.extraCA" $ }}
{{- $ca = append $ca "/etc/meridian/ring/extra-ca.crt" }}
{{- end }}
{{- $ring := dict
  "enabled" true
  "node_name" (printf "%s-{hostname}" $site)
  "region" $region
  "bind" "0.0.0.0:7946"
  "seeds" (deepCopy $seeds)
  "rejoin_interval" "10s"
  "key_file" "/etc/meridian/gossip/key"
  "require_encryption" true
  "ca" $ca
  "credential" (dict "cert_file" "/etc/meridian/ring/tls.crt" "key_file" "/etc/meridian/ring/tls.key") }}
{{- with $v.ring.trustDomain }}
{{- $_ := set $ring "trust_domain" . }}
{{- end }}
{{- with $v.ring.revoked }}
{{- $_ := set $ring "revoked" (deepCopy .) }}
{{- end }}
{{- if eq $v.gossip.expose "LoadBalancer" }}
{{- $_ := set $ring "advertise_from" (dict "service" "{hostname}-gossip") }}
{{- end }}
{{- with .advertise }}
{{- $_ := set $ring "advertise" . }}
{{- end }}
{{- if $lb }}
{{- $_ := set $ring "dns_addresses_from" (dict "service" (printf "%s-dns" $fullname)) }}
{{- end }}

{{- $kube := dict "status_writeback" true "status_annotation" $v.components.statusAnnotation.enabled }}
{{- if $v.members.enabled }}
{{- $_ := set $kube "member_secrets" (dict "namespace" $.Release.Namespace) }}
{{- end }}

{{- $cfg := dict
  "server" $server
  "zones" (list $z)
  "ring" $ring
  "clusters" (list (dict "name" (default $site $v.site.cluster) "region" $region "kubernetes" (dict "in_cluster" true)))
  "kubernetes" $kube }}
{{- if $v.providers }}
{{- $_ := set $cfg "providers" (deepCopy $v.providers) }}
{{- end }}
{{- $cfg = mergeOverwrite $cfg (deepCopy $v.extraConfig) }}
{{- toYaml $cfg }}
{{- end }}

{{/* The zone, required unless `config` is set. */}}
{{- define "meridian.zone" -}}
{{- required "zone is required: the GSLB zone this site serves, e.g. gslb.example.com (or set `config`, the whole config file)" .Values.zone }}
{{- end }}

{{/* The site's name, required unless `config` is set. */}}
{{- define "meridian.siteName" -}}
{{- required "site.name is required: this site's name, a DNS label such as east; its pods are the ring nodes <site.name>-<pod> (or set `config`, the whole config file)" .Values.site.name }}
{{- end }}

{{/*
The URI SAN of this site's credential: every pod of the StatefulSet
("<site.name>-<pod>"), at most replicaCount of them live (a StatefulSet
never surges).
*/}}
{{- define "meridian.credentialURI" -}}
{{- printf "spiffe://%s/prober/%s/%s-*/max-nodes/%d" (default (include "meridian.zone" .) .Values.ring.trustDomain) (required "site.region is required" .Values.site.region) (include "meridian.siteName" .) (int .Values.replicaCount) }}
{{- end }}

{{/*
The URI SAN of the admin capability (ring.admin): the site's pods may
change traffic over the ring.
*/}}
{{- define "meridian.capabilityURI" -}}
{{- printf "meridian://%s/capability/admin" (default (include "meridian.zone" .) .Values.ring.trustDomain) }}
{{- end }}

{{/* "true" when a second CA bundle is mounted; fails when both sources are set. */}}
{{- define "meridian.extraCA" -}}
{{- $e := .Values.ring.extraCA }}
{{- if and $e.configMap $e.secret }}
{{- fail "ring.extraCA: set configMap or secret, not both (the one bundle of a second CA, for a CA rotation)" }}
{{- end }}
{{- if or $e.configMap $e.secret }}true{{ end }}
{{- end }}

{{/*
The name of pod i's gossip Service, "<pod>-gossip" (ring.advertise_from
reads "{hostname}-gossip"). Argument: (list root i).
*/}}
{{- define "meridian.gossipService" -}}
{{- $name := printf "%s-%d-gossip" (include "meridian.fullname" (index . 0)) (index . 1) }}
{{- if gt (len $name) 63 }}
{{- fail (printf "Service name %s is longer than 63 characters: shorten the release name or set fullnameOverride" $name) }}
{{- end }}
{{- $name }}
{{- end }}

{{/*
The per-pod ring.advertise of gossip.expose NodePort, one per ordinal, as
a YAML list; checks the lengths of gossip.advertise and gossip.nodePorts.
*/}}
{{- define "meridian.checkGossip" -}}
{{- $g := .Values.gossip }}
{{- $n := int .Values.replicaCount }}
{{- if eq $g.expose "NodePort" }}
{{- if or (ne (len $g.nodePorts) $n) (ne (len $g.advertise) $n) }}
{{- fail (printf "gossip.expose NodePort needs one gossip.nodePorts entry and one gossip.advertise address per pod: replicaCount is %d, gossip.nodePorts has %d, gossip.advertise %d" $n (len $g.nodePorts) (len $g.advertise)) }}
{{- end }}
{{- else if eq $g.expose "LoadBalancer" }}
{{- if and $g.advertise (ne (len $g.advertise) $n) }}
{{- fail (printf "gossip.advertise has %d addresses for %d pods (replicaCount): one per pod ordinal, or none" (len $g.advertise) $n) }}
{{- end }}
{{- if $g.nodePorts }}
{{- fail "gossip.nodePorts only goes with gossip.expose NodePort" }}
{{- end }}
{{- else }}
{{- if or $g.advertise $g.nodePorts }}
{{- fail "gossip.advertise and gossip.nodePorts do not go with gossip.expose hostNetwork: each pod advertises its node's address" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The Services whose external addresses the rendered config reads, as a YAML
list: every pod's gossip Service (ring.advertise_from, gossip.expose
LoadBalancer) and the DNS Service (ring.dns_addresses_from, a LoadBalancer).
With `config` set, the same names (that config may read them).
*/}}
{{- define "meridian.readServices" -}}
{{- $names := list }}
{{- if eq .Values.gossip.expose "LoadBalancer" }}
{{- range $i := until (int .Values.replicaCount) }}
{{- $names = append $names (include "meridian.gossipService" (list $ $i)) }}
{{- end }}
{{- end }}
{{- if eq .Values.service.dns.type "LoadBalancer" }}
{{- $names = append $names (printf "%s-dns" (include "meridian.fullname" .)) }}
{{- end }}
{{- toYaml $names }}
{{- end }}
