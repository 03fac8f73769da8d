// Package join registers a member cluster with a hub, as `meridian cluster
// join` does, and removes it again (`meridian cluster unjoin`).
//
// With the operator's credentials for both clusters, Join makes, in the
// member: a namespace (unless it exists), ServiceAccount meridian-hub in
// it, and ClusterRole + ClusterRoleBinding meridian-hub with the rules of
// grants.Member (what Meridian reads and writes in every member), plus one
// ClusterRole + binding meridian-hub-COMPONENT per chosen component with
// grants' rules of that component. It mints a bound token for the
// ServiceAccount (TokenRequest API) and writes Secret member-NAME into the
// hub's member_secrets namespace: labelled meridian.io/member=true,
// annotated meridian.io/cluster and meridian.io/region, holding under key
// kubeconfig an inline kubeconfig (https server, certificate-authority-data,
// token) that kube.MemberFromSecret accepts — checked before it is written.
//
// # Rules
//
//  1. Every object Join makes carries the labels
//     app.kubernetes.io/managed-by=meridian-cluster-join and
//     meridian.io/joined-as=NAME. Only objects with both are changed or
//     deleted; an object of the same name without them (or joined as
//     another name) is refused before anything is changed. A namespace that
//     exists already is used as it is and never labelled, so it is never
//     deleted.
//  2. Join is idempotent: a second run updates the objects to the plan
//     (rules, subjects, the region), deletes the component roles no longer
//     chosen, and mints a new token (that is how to renew it). A token
//     minted before stays valid until it expires or the ServiceAccount is
//     deleted (Kubernetes has no revocation of one bound token).
//  3. Unjoin deletes what carries the labels for NAME, in both clusters
//     (bindings, roles, ServiceAccounts, then the hub Secret), and reports
//     objects with the planned names that it leaves because they lack them.
//     A namespace Join made is deleted only when it holds nothing but what
//     Join made and what Kubernetes puts in every namespace (ServiceAccount
//     default, ConfigMap kube-root-ca.crt, Events); otherwise it is left,
//     with the objects named.
//  4. No token is printed or logged; it is only written into the Secret.
//
// Plan, Kubeconfig, EndpointFor and Rows are pure; Join, Unjoin and List talk
// to the clusters through client-go.
package join
