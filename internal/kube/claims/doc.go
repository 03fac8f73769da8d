// Package claims decides which namespace owns each host name that
// annotated Kubernetes objects claim (meridian.io/hostname).
//
// [Decide] is one pure function from a [Policy] (kubernetes.claims,
// kubernetes.unclaimed_names and the zones' reserved names) and the claims
// of the watched objects to a [Decision] per name: which namespaces' objects
// may serve it, and why every other namespace may not. It reads no clock,
// does no I/O, and its result does not depend on the order of its inputs,
// so every Meridian node that watches the same objects computes the same
// owners. It never looks at when a node saw an object (event order differs
// between nodes and restarts); only at the objects themselves.
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
//  4. Unclaimed names, unclaimed_names: oldest (the default). The name
//     belongs to the namespace whose object claimed it first: the oldest
//     creationTimestamp among the objects that carry the name; a tie goes
//     to the namespace name that sorts first. Objects of other namespaces
//     are refused. Refusal kind "taken".
//
//  5. Only valid claims count: an object whose meridian.io/hostname never
//     parsed claims nothing; one with a rejected later value keeps claiming
//     its last valid names (as it keeps serving its last valid settings).
//
// # Limits of rule 4
//
// "First" is the object's creationTimestamp, not the moment the
// meridian.io/hostname annotation was added: Kubernetes keeps no
// trustworthy time for an annotation, and Meridian's own first sight of it
// differs from node to node. So an object created long ago and annotated
// today takes an unclaimed name from a newer owner; deleting and
// recreating the owner's oldest object hands the name to the oldest
// remaining claimer. Both are visible (the refused objects get Events and
// problems; every owner change is logged and counted in
// meridian_kube_hostname_owner_changes_total), but they are not prevented.
// Where tenants do not trust each other, pin ownership with
// kubernetes.claims (rule 2 ignores age entirely), and set
// unclaimed_names: refuse so that a name nobody listed is served by nobody.
package claims
