package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Overrides travel over the ring as signed entries (ADR 0008, issue 31):
// every version of an entry carries the Ed25519 signature of the node that
// wrote it (Stamp.Node: the node that took the API request, or that removed
// or stepped it), made with that node's ring identity. Relays pass entries
// on as they are, so a receiver checks the writer's own signature whoever
// delivered the state, and an entry cannot claim another writer than the
// key that signed it. The writer must hold the admin capability
// (ring.peers[].admin or its credential's capability URI).

// Reasons an entry from the ring is refused beyond CheckEntry's; they label
// meridian_admin_entries_rejected_total with source "ring".
const (
	RejectCapability = "capability"  // its writer (Stamp.Node) is unknown or lacks the admin capability
	RejectSignature  = "signature"   // no signature, or not the writer's
	RejectOrigin     = "origin"      // who is not name@node, names another node than the writer, or changed
	RejectCapOrigin  = "cap-origin"  // its writer already holds its share (MaxPerOrigin, MaxOriginBytes)
	RejectCapTotal   = "cap-total"   // the other nodes' entries fill what this node keeps for them
	RejectMinHealthy = "min-healthy" // it would leave a service below min_healthy (and was not forced)
)

// RingRejectReasons lists every reason an entry from the ring may be
// refused, in documentation order.
var RingRejectReasons = []string{RejectInvalid, RejectFuture, RejectUnknownTarget, RejectCapability, RejectSignature, RejectOrigin, RejectCapOrigin, RejectCapTotal, RejectMinHealthy}

// ErrNoCapability is wrapped by the error a change gets on a node whose
// ring identity may not change traffic: its peers would refuse the entry.
var ErrNoCapability = errors.New("no admin capability")

// ErrBadSignature is wrapped by the error of an entry whose writer's
// signature does not verify (the ring checks them).
var ErrBadSignature = errors.New("bad signature")

// CapabilityAdmin is the capability a node needs to originate overrides on
// the ring (ring.peers[].admin: true, or `meridian ring ca issue
// --capability admin`).
const CapabilityAdmin = "admin"

// sigDomain separates an entry's signature from every other use of a ring key.
const sigDomain = "meridian-admin-entry-v1\x00"

// SigInput is what the writer of entry id signs: a domain, then the entry
// (without its signature) in the canonical JSON form a receiver computes
// again from what it decoded.
func SigInput(id string, e Entry) []byte {
	e.Sig = nil
	b, _ := json.Marshal(signed{ID: id, E: e})
	// One round trip makes the form canonical: what the receiver decodes
	// and encodes again (invalid UTF-8, zones of times) is what was signed.
	var back signed
	if json.Unmarshal(b, &back) == nil {
		b, _ = json.Marshal(back)
	}
	return append([]byte(sigDomain), b...)
}

type signed struct {
	ID string `json:"id"`
	E  Entry  `json:"e"`
}

// Author splits who ("name@node") into the token's name and the node that
// took the request; ok is false for a who without both.
func Author(who string) (name, node string, ok bool) {
	i := strings.LastIndexByte(who, '@')
	if i <= 0 || i == len(who)-1 {
		return "", "", false
	}
	return who[:i], who[i+1:], true
}

// CheckOrigin binds a ring entry to its writer: who must be name@node; the
// version that created the entry (stamped at its own time) must have been
// written by that node; later versions (a removal, a shift's step on the
// writer) keep the who of the version held (held nil: none held).
func CheckOrigin(id string, e Entry, held *Entry) *EntryError {
	bad := func(format string, args ...any) *EntryError {
		return &EntryError{ID: id, Reason: RejectOrigin, Err: fmt.Errorf(format, args...)}
	}
	_, node, ok := Author(e.Override.Who)
	switch {
	case !ok:
		return bad("who %q is not name@node (the token's name on the node that took the request)", e.Override.Who)
	case e.Stamp.At == e.Override.At.UnixNano() && node != e.Stamp.Node:
		return bad("set by %q on node %q but written and signed by %q", e.Override.Who, node, e.Stamp.Node)
	case held != nil && held.Override.Who != e.Override.Who:
		return bad("who changed from %q to %q (the author of an override never changes)", held.Override.Who, e.Override.Who)
	}
	return nil
}
