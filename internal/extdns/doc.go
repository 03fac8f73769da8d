// Package extdns makes Meridian an ExternalDNS webhook provider's store:
// the records that ExternalDNS instances (one per member cluster, each
// with its own --txt-owner-id and token) write through the webhook
// (package extdns/webhook) are kept per cluster here and become Meridian
// services in the serving pipeline's last merge stage.
//
// Rules, each pinned by a case of the table tests:
//
//   - A record belongs to the cluster whose token wrote it. Each cluster's
//     ExternalDNS reads back only its own records (its A/AAAA/CNAME records
//     and the TXT ownership records of its TXT registry), so one cluster's
//     ExternalDNS never sees, updates or deletes another cluster's targets.
//   - What is stored is what AdjustEndpoints gives: names lower case without
//     the final dot, targets canonical, sorted and unique, a TTL of 0 set
//     to the zone's ttl, and only Meridian's provider-specific properties
//     (webhook/meridian-weight, webhook/meridian-health-check), sorted. A
//     change is normalized the same way before it is stored, so the next
//     sync finds what it asked for and plans nothing.
//   - A record is accepted only under a served zone, with type A, AAAA,
//     CNAME (not at a zone apex) or TXT, targets that parse for the type
//     (A and AAAA targets also as tenant_targets allows: no unspecified,
//     link-local, multicast or reserved address; loopback only with
//     allow_loopback), a TTL of 0..604800, no set identifier, and within
//     the limits (records and bytes per cluster, targets per record, bytes
//     per target, 255 bytes per TXT string). Only ExternalDNS's labels are
//     kept. A change with one bad record is refused whole, naming the
//     record and field.
//   - Tenancy (ADR 0006): a served record (A, AAAA, CNAME) follows the
//     rules 1 to 3 of package kube/claims for the namespace of the object
//     it comes from (its resource label, kind/namespace/name; none: no
//     namespace): no zone apex or name of the ring's unless a claim lists
//     it for that namespace, never an in-zone nameserver name, no name a
//     claim gives to other namespaces, no unclaimed name under
//     unclaimed_names refuse. Records are checked again at every merge
//     with the current config; one refused then is not served.
//   - The A, AAAA and CNAME records of one name from every cluster become
//     ONE weighted service: each target an endpoint of the cluster that
//     wrote it, weighted by that record's webhook/meridian-weight (0..1000,
//     default 100, like meridian.io/weight: the weight of each target).
//     TXT records are not served: they are the registry's bookkeeping.
//   - Names, CNAME targets and health checks are checked as the model
//     checks services[].name, endpoints[].cname and health_check (ASCII or
//     punycode, no probing check on a CNAME), so that a record accepted
//     alone is served.
//   - What one cluster writes never removes another cluster's targets
//     from a name: addresses win over CNAMEs (when any cluster writes an
//     address for the name, the CNAME records of it are left out, and the
//     addresses are served); a target two clusters write is served once,
//     as the first cluster's in cluster order. Each such record is
//     reported (logged once) with the name.
//   - The service's TTL is the smallest TTL of its records (a shorter TTL
//     only brings resolvers back sooner); its health check is the first
//     webhook/meridian-health-check in cluster order (a cluster that sets
//     another is reported), else the configured default (none: not
//     probed), which a CNAME service does not take (a CNAME cannot be
//     probed).
//   - A name that the config file or a Kubernetes source defines stays
//     theirs: the ExternalDNS records of that name are not served. Records
//     of a cluster that is not (or no longer) configured are not served
//     (the name is served from the others'). Each is reported with its
//     reason.
package extdns
