// Package merge merges the Kubernetes-sourced services of the member
// clusters into the config file's desired state, for the serving pipeline
// (serving.KubeSource), and reads back what is served for the objects'
// status write-back and GET /v1/kube.
package merge

import (
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/kube"
	"github.com/meridian-gslb/meridian/internal/kube/claims"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// Kube is the Kubernetes stage of the pipeline: the member clusters' objects
// (through a kube.Manager) and the clusters that member Secrets register,
// merged into the file's desired state. It is a KubeSource.
type Kube struct {
	Manager *kube.Manager
	Secrets *kube.SecretWatcher // nil without kubernetes.member_secrets
	// Election is the writer election (nil without
	// kubernetes.leader_election: every node writes).
	Election *kube.Elector
	Logger   *slog.Logger
	// First is the ledger of the names' first claimants (kept in the state
	// directory); nil keeps it in memory, for the life of this Kube.
	First *kube.FirstClaims
	// Now is the clock of the builds (nil: time.Now).
	Now func() time.Time
	// OnRelease is called (on a timer's goroutine) when a released name
	// of the ledger becomes free, for a merge that hands it on; nil: none
	// (the next change merges).
	OnRelease func()

	mu      sync.Mutex
	objs    []kube.Object
	res     kube.Result
	dropped map[string]string // last logged dropped reasons, so each is logged once
	// normalized is what the last merge normalized (see mergeServices).
	normalized normalizedKube
	// fileNames is the names the services of file define (kube.BuildWith):
	// made once per loaded file, not per merge, and replaced with it.
	fileNames kube.FileNames
	namesOf   *config.File
	// validated is what the last build validated (kube.BuildSafe).
	validated *kube.Validated
	// spare is the next merge's services list, prepared in advance (PrepareNext);
	// next is what the last merge would have wanted of it.
	spare spareList
	next  spareList
	// release fires OnRelease when the next released name becomes free.
	release *time.Timer
}

// spareList is a merged services list prepared before a merge: the services
// of file copied, and room after them for at least kube services.
type spareList struct {
	file *config.File
	kube int
	buf  []model.Service // len: the file's services
}

// spareFrom is the number of services of the file from which the merged
// list is prepared before a merge (PrepareNext): below it, the copy costs
// less than the memory held for it.
var spareFrom = 4096

// fileNamesOf is the set of the names f's services define, made on the first
// merge of f (f is never modified once loaded).
func (k *Kube) fileNamesOf(f *config.File) kube.FileNames {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.namesOf != f {
		k.fileNames, k.namesOf = kube.NewFileNames(f.Services), f
	}
	return k.fileNames
}

// Merge adds the Kubernetes-sourced services to l's desired state. A
// service that does not validate is left out (and reported on its objects);
// if the merged whole still fails, the file alone comes back with the error.
func (k *Kube) Merge(l *serving.Loaded) (*config.File, error) {
	secrets := k.Secrets.Members()
	k.Manager.Configure(l.File.Kubernetes, MemberSources(&l.File.Desired, secrets))
	return k.merge(l, secrets, k.Manager.Objects(), k.Manager.Observe)
}

// merge is Merge on the given member Secrets and watched objects; observe
// is handed the build result (the Manager's conflict log).
func (k *Kube) merge(l *serving.Loaded, secrets []kube.SecretMember, objs []kube.Object, observe func(kube.Result)) (*config.File, error) {
	base := l.File.Desired
	clusters, problems := WithSecretClusters(&base, secrets)
	base.Clusters = clusters
	k.mu.Lock()
	validated := k.validated
	k.mu.Unlock()
	first := k.firstClaims()
	res, validated, err := kube.BuildSafe(objs, &base, k.fileNamesOf(l.File), validated, first.Ledger(), k.now())
	if err != nil {
		return nil, err
	}
	first.Set(res.First)
	k.armRelease(res.First, l.File.Kubernetes.ClaimReleaseAfter.D())
	observe(res)
	k.mu.Lock()
	k.objs, k.res, k.validated = objs, res, validated
	for name, why := range res.Dropped {
		if k.dropped[name] != why {
			k.Logger.Warn("kubernetes: service not served", "service", name, "reason", why)
		}
	}
	for _, p := range problems {
		if k.dropped["secret:"+p] == "" {
			k.Logger.Error("kubernetes: member Secret not used", "problem", p)
		}
		res.Dropped["secret:"+p] = p
	}
	k.dropped = res.Dropped
	k.mu.Unlock()
	if len(res.Services) == 0 && len(clusters) == len(l.File.Clusters) && len(secrets) == 0 {
		return l.File, nil
	}
	if len(secrets) == 0 {
		if f, ok := k.mergeServices(l, res.Services); ok {
			return f, nil
		}
	}
	d := base
	d.Services = concat(d.Services, res.Services)
	nd, err := model.Normalize(&d)
	if err != nil {
		return l.File, fmt.Errorf("kubernetes services do not merge with the config file: %w", err)
	}
	f := *l.File
	f.Desired = *nd
	return &f, nil
}

// mergeServices adds the Kubernetes services svcs to the file's desired
// state without normalizing the file's services again, so that they stay
// the values the file loaded (and the engine shares their compiled form
// with the previous snapshot). It gives the same desired state as
// model.Normalize of the whole, because:
//   - l.File is loaded by Load: normalized and validated, and Normalize of
//     a normalized service is that service (TestKubeMergeIsTheWholeNormalized);
//   - the clusters are the file's (no member Secret adds one), so the zones,
//     clusters and the other settings every service is validated against
//     are those the file's services were validated against at load;
//   - model.Validate checks each service against those settings alone,
//     except that owner names are unique, and kube.Build never gives a
//     name the file defines (and gives each name once).
//
// The Kubernetes services are validated and normalized with the file's
// settings; one that did not change since the last merge keeps the value
// that merge gave (the same input gives the same value). ok is false when
// they do not validate: the caller then normalizes the whole, for the
// error with the merged paths.
func (k *Kube) mergeServices(l *serving.Loaded, svcs []model.Service) (*config.File, bool) {
	kd := l.File.Desired
	kd.Services = svcs
	nk, err := model.Normalize(&kd)
	if err != nil {
		return nil, false
	}
	k.mu.Lock()
	prev := k.normalized
	if prev.file != l.File {
		prev = normalizedKube{}
	}
	next := normalizedKube{file: l.File, raw: make(map[string]model.Service, len(svcs)), norm: make(map[string]model.Service, len(svcs))}
	for i := range nk.Services {
		name := svcs[i].Name
		if raw, ok := prev.raw[name]; ok && reflect.DeepEqual(raw, svcs[i]) {
			nk.Services[i] = prev.norm[name]
		}
		next.raw[name], next.norm[name] = svcs[i], nk.Services[i]
	}
	k.normalized = next
	k.mu.Unlock()
	f := *l.File
	f.Desired = *nk
	f.Desired.Services = k.list(l.File, nk.Services)
	return &f, true
}

// list is the file's services followed by the Kubernetes services ks, in
// one slice of its own. When PrepareNext made it ahead for file (the
// copy of the file's services: 17.6 MB at 100 000 services, with the
// garbage collector's share of it) a change only copies ks into it.
func (k *Kube) list(file *config.File, ks []model.Service) []model.Service {
	k.mu.Lock()
	sp := k.spare
	k.spare, k.next = spareList{}, spareList{file: file, kube: len(ks)}
	k.mu.Unlock()
	n := len(file.Services)
	if sp.file != file || cap(sp.buf)-n < len(ks) {
		return concat(file.Services, ks)
	}
	out := sp.buf[: n+len(ks) : n+len(ks)] // no room after: an append copies, as from concat
	copy(out[n:], ks)
	return out
}

// PrepareNext makes the next merge's services list ahead (see list), once
// the last merge is served: the pipeline calls it after a publish. It does
// nothing for a file of fewer than spareFrom services, or when a list is
// ready already.
func (k *Kube) PrepareNext() {
	k.mu.Lock()
	want, have := k.next, k.spare.file
	k.mu.Unlock()
	if want.file == nil || have == want.file || len(want.file.Services) < spareFrom {
		return
	}
	n := len(want.file.Services)
	buf := make([]model.Service, n, n+want.kube+want.kube/4+64) // room for a few more Kubernetes services
	copy(buf, want.file.Services)
	k.mu.Lock()
	if k.next.file == want.file {
		k.spare = spareList{file: want.file, kube: want.kube, buf: buf}
	}
	k.mu.Unlock()
}

// concat is a followed by b in one new slice of their size: appending b to
// a clipped a would allocate a quarter more (≈ 3 MB at 100 000 services).
func concat(a, b []model.Service) []model.Service {
	out := make([]model.Service, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

// normalizedKube is what the last merge normalized, for l.File: the
// Kubernetes services as built and as normalized, by name.
type normalizedKube struct {
	file      *config.File
	raw, norm map[string]model.Service
}

// armRelease sets the timer that merges again when the first released
// name of ledger becomes free.
func (k *Kube) armRelease(ledger claims.Ledger, after time.Duration) {
	if k.OnRelease == nil {
		return
	}
	if after <= 0 {
		after = model.DefaultClaimReleaseAfter
	}
	at, ok := ledger.NextFree(after)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.release != nil {
		k.release.Stop()
		k.release = nil
	}
	if ok {
		// A moment after: the build at that time must see it expired.
		k.release = time.AfterFunc(time.Until(at)+time.Second, k.OnRelease)
	}
}

// firstClaims is k.First, or one in memory made on first use.
func (k *Kube) firstClaims() *kube.FirstClaims {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.First == nil {
		k.First, _ = kube.OpenFirstClaims("", k.Logger) // in memory: no error
	}
	return k.First
}

func (k *Kube) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

// Last is the objects and build result of the last merge.
func (k *Kube) Last() ([]kube.Object, kube.Result) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.objs, k.res
}

// MemberSources lists the members the config file and the member Secrets
// register. A cluster the file connects to itself ignores its Secret.
func MemberSources(d *model.Desired, secrets []kube.SecretMember) []kube.MemberSource {
	var out []kube.MemberSource
	inFile := map[string]bool{}
	for _, c := range d.Clusters {
		if c.Kubernetes != nil {
			inFile[c.Name] = true
			out = append(out, kube.MemberSource{Cluster: c.Name, Config: *c.Kubernetes, Origin: "config"})
		}
	}
	for _, s := range secrets {
		if !inFile[s.Cluster.Name] {
			out = append(out, s.Source)
		}
	}
	return out
}

// WithSecretClusters adds the clusters member Secrets register to the
// file's clusters: a new cluster takes its region and tags from the
// Secret's annotations; a file cluster keeps the file's. Secrets that
// cannot be used are returned as problems.
func WithSecretClusters(d *model.Desired, secrets []kube.SecretMember) (clusters []model.Cluster, problems []string) {
	clusters = slices.Clone(d.Clusters)
	idx := map[string]int{}
	for i, c := range clusters {
		idx[c.Name] = i
	}
	for _, s := range secrets {
		marker := &model.KubeMember{Kubeconfig: s.Source.Origin}
		i, ok := idx[s.Cluster.Name]
		switch {
		case ok && clusters[i].Kubernetes != nil:
			problems = append(problems, fmt.Sprintf("%s: cluster %s is connected by the config file; the Secret is ignored", s.Source.Origin, s.Cluster.Name))
		case ok:
			c := clusters[i]
			c.Kubernetes = marker
			if c.Heartbeat == nil {
				c.Heartbeat = &model.Heartbeat{}
			}
			clusters[i] = c
		case s.Cluster.Region == "":
			problems = append(problems, fmt.Sprintf("%s: annotation %s is required for cluster %s, which the config file does not define", s.Source.Origin, kube.AnnoRegion, s.Cluster.Name))
		default:
			c := s.Cluster
			c.Kubernetes = marker
			clusters = append(clusters, c)
		}
	}
	return clusters, problems
}

// Statuses is what meridian.io/status says on each watched object: the
// served answer set of its service with the decided timeline behind it.
// It looks only at the services objects are behind (res.Sources), not at
// every service of the snapshot: kube.Statuses asks for no other name (a
// name Build serves, or does not drop, has its objects in Sources).
func (k *Kube) Statuses(st *serving.State) (map[kube.ObjectRef]kube.Status, map[kube.ObjectRef][]string) {
	objs, res := k.Last()
	snap := st.Snapshot
	timeline := map[vote.Subject]failover.Timeline{}
	clusters := map[string]failover.ClusterState{}
	if d := st.Decision; d != nil {
		for _, e := range d.Endpoints {
			if _, ok := res.Sources[e.Subject.Service]; ok {
				timeline[e.Subject] = e.Timeline
			}
		}
		for _, c := range d.Clusters {
			clusters[c.Name] = c
		}
	}
	order := map[string][]string{}
	for _, s := range snap.Desired().Services {
		if _, ok := res.Sources[s.Name]; ok && s.Failover != nil {
			order[s.Name] = s.Failover.Order
		}
	}
	svcs := map[string]kube.ServiceView{}
	view := func(name string) (kube.ServiceView, bool) {
		if v, ok := svcs[name]; ok {
			return v, true
		}
		s, ok := snap.Service(name)
		if !ok {
			return kube.ServiceView{}, false
		}
		v := serviceView(s, order[name], timeline, clusters)
		svcs[name] = v
		return v, true
	}
	return kube.Statuses(objs, res, view), res.Problems
}

// serviceView is the decided state of the served service s: its
// endpoints with the decided timeline (timeline by endpoint, clusters by
// name) and the failover order.
func serviceView(s engine.ServiceStatus, order []string, timeline map[vote.Subject]failover.Timeline, clusters map[string]failover.ClusterState) kube.ServiceView {
	v := kube.ServiceView{Strategy: s.Strategy, Order: order}
	for _, e := range s.Endpoints {
		// The draw weight: a capacity-aware service's share follows its effective weights.
		ev := kube.EndpointView{Cluster: e.Cluster, Target: e.Target, Weight: e.DrawWeight(), State: e.State.String(),
			Drained: e.Drained, Forced: e.Forced, Available: e.State.String() != "down" && !e.Drained}
		if tl, ok := timeline[vote.EndpointSubject(s.Name, e.Target)]; ok {
			ev.Since, ev.Reason = tl.Since, tl.Reason
		}
		if c, ok := clusters[e.Cluster]; ok && c.Since.After(ev.Since) && c.State != failover.Unknown {
			ev.Since, ev.Reason = c.Since, "cluster "+strings.ToLower(c.State.String())+": "+c.Reason
		}
		v.Endpoints = append(v.Endpoints, ev)
	}
	return v
}

// KubeReport is GET /v1/kube.
type KubeReport struct {
	Members  []kube.MemberStatus `json:"members"`
	Services map[string][]string `json:"services"`          // Kubernetes-sourced service -> objects behind it
	Dropped  map[string]string   `json:"dropped,omitempty"` // names not served, and why
	Problems map[string][]string `json:"problems,omitempty"`
	Writer   kube.ElectionStatus `json:"writer"` // who writes status and propagates
	// FirstClaims is this node's ledger of first claimants: per name no
	// kubernetes.claims entry covers, the namespace that owns it and since
	// when (and, once its objects stopped claiming it, since when it is
	// released).
	FirstClaims claims.Ledger `json:"firstClaims,omitempty"`
}

// Report builds GET /v1/kube: members (offline when the ring decided their
// heartbeat is lost), the services and the objects behind them.
func (k *Kube) Report(d *failover.Decision) KubeReport {
	rep := KubeReport{Services: map[string][]string{}, Problems: map[string][]string{}}
	offline := map[string]failover.ClusterState{}
	if d != nil {
		for _, c := range d.Clusters {
			if c.Monitored && c.State != failover.Ready && c.State != failover.Unknown {
				offline[c.Name] = c
			}
		}
	}
	for _, m := range k.Manager.Members() {
		if c, ok := offline[m.Cluster]; ok && (m.State == kube.StateReady || strings.HasPrefix(m.Reason, "unreachable")) {
			// The ring decided its heartbeat is lost past the grace.
			m.State, m.Reason, m.Since = kube.StateOffline, "heartbeat lost: "+c.Reason, c.Since
		}
		rep.Members = append(rep.Members, m)
	}
	_, res := k.Last()
	for name, refs := range res.Sources {
		for _, r := range refs {
			rep.Services[name] = append(rep.Services[name], r.String())
		}
	}
	rep.Dropped = res.Dropped
	rep.Writer = k.Election.Status()
	if len(res.First) > 0 {
		rep.FirstClaims = res.First
	}
	for ref, ps := range res.Problems {
		rep.Problems[ref.String()] = ps
	}
	return rep
}
