// Package kube turns annotated Kubernetes objects in member clusters into
// global services, and reports back on them.
//
//   - Manager connects to each member cluster (a kubeconfig, a context, the
//     pod's service account, or a Secret labelled meridian.io/member=true on
//     the hub: WatchSecrets), checks it (reachable, TLS verified, credentials
//     accepted), watches its Services and Ingresses that carry
//     meridian.io/hostname with informers, its DNSEndpoints and (with
//     kubernetes.mcs) ServiceExports where the CRDs exist, and its Gateway
//     API routes and Gateways where the CRDs exist (gatewaywatch.go; RouteTargets maps a
//     route and its accepting Gateways to addresses), and polls its /readyz for the
//     cluster heartbeat (Poller). A member that fails is NotReady with a
//     Reason and retried; the others keep serving.
//   - A member (member.go) holds the clients, the lifecycle and the objects
//     its sources share (objects.go); the work is done by one source per
//     kind (servicesource.go: Services and Ingresses; gatewaywatch.go:
//     Gateway API routes and Gateways; dnsendpoint.go: ExternalDNS's
//     DNSEndpoints; mcs.go: the MCS API's ServiceExports and ServiceImports,
//     with kubernetes.mcs; endpointslices.go: EndpointSlices) and the
//     status writer (status.go). The custom resources are read through the
//     dynamic client into shape structs, where their CRDs are served
//     (gatewaywatch.go, crdwatch.go). The informers keep slim objects:
//     what Meridian reads and nothing else (slim.go).
//   - ReadDNSEndpoint and ReadExport turn a DNSEndpoint and a
//     ServiceExport into the annotations, targets and problems a Service
//     would give, so they take the same path (objectSet, Build, claims);
//     ServedCondition is the meridian.io/Served condition of an export.
//   - ParseAnnotations validates every meridian.io/ annotation of an object
//     like the matching config field; an object whose annotations are
//     rejected keeps serving its last valid settings.
//   - Build (BuildSafe on the input path) turns the watched objects into
//     global services, pure and deterministic: the claims decide which
//     namespace owns which name, conflicts are refused with the reason, and
//     names the config file defines stay the file's. Merging the result into
//     the desired state is the serving pipeline's step.
//   - Statuses and WriteStatus record what each object serves as Events and,
//     optionally, the meridian.io/status annotation.
//
// The rules are documented in docs/kubernetes.md; the tenant boundaries in
// docs/adr/0006-kubernetes-tenant-boundaries.md.
package kube
