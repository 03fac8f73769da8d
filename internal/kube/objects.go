package kube

import (
	"encoding/json"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// objState is one watched object with its last valid settings.
type objState struct {
	obj     Object
	uid     types.UID
	errs    []FieldError
	runtime runtime.Object // for Events (the informer's slim copy)
	status  string         // current meridian.io/status value on the object
}

// objectRead is what a source read of one watched object: everything but
// the parsed annotations.
type objectRead struct {
	ref      ObjectRef
	uid      types.UID
	created  time.Time
	obj      runtime.Object
	anno     map[string]string // the annotations it is read with
	own      map[string]string // its own annotations (routes: anno may add spec.hostnames)
	annoErr  *FieldError       // routes: a rejected meridian.io/hostnames-from-spec
	targets  []string
	problems []string
	backends []string
	// nameTargets are the targets of each name (a DNSEndpoint: its
	// endpoints name them one by one; targets is their union).
	nameTargets map[string][]string
}

// objectSet is a member's watched objects, the result its sources share:
// the sources write it, the status writer and the Manager read it. Safe
// for concurrent use.
type objectSet struct {
	mu    sync.Mutex
	byRef map[ObjectRef]*objState
}

func newObjectSet() *objectSet {
	return &objectSet{byRef: map[ObjectRef]*objState{}}
}

// put stores one object read with its parsed settings and errors; with
// errors, the object keeps its last valid settings. changed reports
// whether what it serves or its errors changed.
func (s *objectSet) put(in objectRead, settings Settings, errs []FieldError) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.byRef[in.ref]
	if st == nil || st.uid != in.uid {
		st = &objState{uid: in.uid}
		s.byRef[in.ref] = st
	}
	before, beforeErrs := st.obj, joinErrs(st.errs)
	st.obj.Ref, st.obj.Created, st.obj.Targets, st.obj.Problems = in.ref, in.created, in.targets, in.problems
	st.obj.Backends, st.obj.NameTargets = in.backends, in.nameTargets
	if len(errs) == 0 {
		st.obj.Settings, st.obj.Valid = settings, true
	}
	st.errs = errs
	st.runtime = in.obj
	st.status = in.own[AnnoStatus]
	return !equalObject(before, st.obj) || beforeErrs != joinErrs(errs)
}

// remove forgets one object; had reports whether it was there.
func (s *objectSet) remove(ref ObjectRef) (had bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, had = s.byRef[ref]
	delete(s.byRef, ref)
	return had
}

// list returns every object, in no particular order.
func (s *objectSet) list() []Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Object, 0, len(s.byRef))
	for _, st := range s.byRef {
		out = append(out, st.obj)
	}
	return out
}

// len is how many objects are watched.
func (s *objectSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byRef)
}

// invalid counts objects whose current annotations are rejected.
func (s *objectSet) invalid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, st := range s.byRef {
		if len(st.errs) > 0 {
			n++
		}
	}
	return n
}

// routes returns the cached objects of every watched Gateway API route.
func (s *objectSet) routes() []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []any
	for ref, st := range s.byRef {
		if isRouteKind(ref.Kind) && st.runtime != nil {
			out = append(out, st.runtime)
		}
	}
	return out
}

// each calls fn for every object with the set locked: fn must not call
// back into the set.
func (s *objectSet) each(fn func(ref ObjectRef, st *objState)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ref, st := range s.byRef {
		fn(ref, st)
	}
}

// setStatus records the meridian.io/status text just written on ref.
func (s *objectSet) setStatus(ref ObjectRef, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.byRef[ref]; st != nil {
		st.status = text
	}
}

func equalObject(a, b Object) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func joinErrs(errs []FieldError) string {
	s := ""
	for i, e := range errs {
		if i > 0 {
			s += "; "
		}
		s += e.Error()
	}
	return s
}
