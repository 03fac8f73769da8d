// Package claims decides which namespace owns each host name that
// annotated Kubernetes objects claim (meridian.io/hostname).
//
// [Decide] is one pure function from a [Policy] (kubernetes.claims,
// kubernetes.unclaimed_names and the zones' reserved names) and the claims
// of the watched objects to a [Decision] per name: which namespaces' objects
// may serve it, and why every other namespace may not. It reads no clock,
// does no I/O, and its result does not depend on the order of its inputs.
// Rules 1 to 3 look at the objects and the policy alone, so every Meridian
// node that watches the same objects computes the same owners; rule 4 also
// reads the node's [Ledger] of first claimants (kept by the caller in the
// state directory), and nodes agree on it when they recorded the same
// first claimant (see "Limits of rule 4").
//
// A tenant is a namespace name: namespace team-a in cluster east and
// namespace team-a in cluster west are the same tenant, and all of their
// objects serve the names team-a owns. The caller merges only the objects
// of the owning namespaces into a service; "the oldest object wins a
// service-level setting" (strategy, ttl, health-check, failover-order) is
// applied among those objects only, so another namespace can neither add
// endpoints nor set the strategy. Objects of other namespaces are refused
// for that name: never merged, reported on the object (Event and
// meridian.io/status problems naming the owner), logged and counted.
//
// # Rules
//
//  1. Reserved names. The apex of every zone and the names of its
//     nameservers are reserved: no object may serve them unless a claim
//     lists the name in names (exactly). A suffix never covers a reserved
//     name. Refusal kind "reserved".
//
//  2. Claims. A claim covers each name in its names, and every name
//     strictly below each of its suffixes (suffix team-a.gslb.example.com
//     covers x.team-a.gslb.example.com, not team-a.gslb.example.com
//     itself). The most specific claims decide a name: claims that list it
//     in names; if none, the claims with the longest covering suffix. The
//     namespaces of all deciding claims own the name together (a name may
//     be given to several namespaces on purpose). Objects of any other
//     namespace are refused, even if they claimed the name first. Refusal
//     kind "not-allowed".
//
//  3. Unclaimed names, unclaimed_names: refuse. A name no claim covers is
//     served by no namespace. Refusal kind "unclaimed".
//
//  4. Unclaimed names, unclaimed_names: oldest (the default). A name that
//     a ServiceExport claims, <service>.<namespace>.<kubernetes.mcs.zone>,
//     belongs to the export's namespace (rule "mcs"): the name holds the
//     namespace, so whoever claimed it first, or claims it later, from
//     another namespace is refused (kind "not-allowed") while the export
//     claims it; the ledger records no owner for it. Any other name
//     belongs to the namespace that claimed it first, as the ledger
//     records it (rule "first"): the recorded namespace keeps the name
//     whatever the age of the objects claiming it now. When none of its
//     objects claims the name any more, the record is released and the
//     namespace keeps the name for Policy.ReleaseAfter
//     (kubernetes.claim_release_after), served by nobody; then the record
//     is dropped. A name no live record holds goes to the namespace of the
//     oldest creationTimestamp among the objects claiming it now (a tie to
//     the namespace name that sorts first), and that is recorded. Objects
//     of other namespaces are refused. Refusal kind "taken".
//
//  5. Only valid claims count: an object whose meridian.io/hostname never
//     parsed claims nothing; one with a rejected later value keeps claiming
//     its last valid names (as it keeps serving its last valid settings).
//
// # Limits of rule 4
//
// The ledger is each node's own. A node with no record of a contested
// name (new, or its state directory emptied) falls back to the oldest
// object, which may be one annotated after the owner's; it then records
// that owner, and may disagree with nodes that recorded the first claimant.
// No field of a tenant's object can settle it: annotations and
// managedFields are the tenant's to write, and resourceVersion is per
// cluster and changes with every write. Agreement would need a record only
// Meridian writes and every node reads (an object beside the writer
// Lease); it is not built. Owner changes are visible (Events, problems,
// meridian_kube_hostname_owner_changes_total). Where tenants do not trust
// each other, pin ownership with kubernetes.claims (rule 2 depends on no
// history) and set unclaimed_names: refuse.
package claims
