package ring

import (
	"time"

	"github.com/meridian-gslb/meridian/internal/vote"
)

// Message types on the wire: the first byte of a signed envelope (see envelope.go).
const (
	msgVote      byte = 1  // a prober's vote
	msgSummary   byte = 2  // "all my votes still hold as of": keeps unchanged votes fresh without resending them
	msgConfirm   byte = 3  // second confirmation request
	msgHeartbeat byte = 4  // a cluster heartbeat from `meridian agent`
	msgKeyOp     byte = 5  // keyring change to apply on every node
	msgLeader    byte = 6  // provider-writer vote, sent directly (never relayed)
	msgShared    byte = 7  // the admin state (overrides), merged by the receiver
	msgRTT       byte = 8  // a prober's smoothed RTTs to some endpoints (rtt.go)
	msgCred      byte = 9  // a node's credential: its certificate chain (creds.go), sent over TCP
	msgPull      byte = 10 // "send me your own current messages", with a challenge (budget.go), over TCP
	msgPullReply byte = 11 // the answer: the sender's own envelopes and the challenge, over TCP
)

// wireVote is vote.Vote with short JSON keys.
type wireVote struct {
	Service string `json:"s,omitempty"`
	Target  string `json:"t"`
	Prober  string `json:"p"`
	Region  string `json:"r"`
	Down    bool   `json:"d,omitempty"`
	At      int64  `json:"a"` // Unix ms
	Seq     uint64 `json:"q"`
}

func toWire(v vote.Vote) wireVote {
	return wireVote{Service: v.Subject.Service, Target: v.Subject.Target, Prober: v.Prober, Region: v.Region,
		Down: v.Status == vote.Down, At: v.ObservedAt.UnixMilli(), Seq: v.Seq}
}

func (w wireVote) vote() vote.Vote {
	st := vote.Up
	if w.Down {
		st = vote.Down
	}
	return vote.Vote{Subject: vote.Subject{Service: w.Service, Target: w.Target}, Prober: w.Prober, Region: w.Region,
		Status: st, ObservedAt: time.UnixMilli(w.At), Seq: w.Seq}
}

// summary says that every vote of Prober is still current as of At. Count
// and SeqSum describe that vote set so a receiver that missed a vote does
// not extend stale ones.
type summary struct {
	Prober string `json:"p"`
	Region string `json:"r"`
	At     int64  `json:"a"`
	Count  int    `json:"n"`
	SeqSum uint64 `json:"q"`
	Inc    uint64 `json:"i"` // incarnation: the prober's first sequence number since it started
}

type confirmReq struct {
	Service string `json:"s,omitempty"`
	Target  string `json:"t"`
	From    string `json:"f"`
	Region  string `json:"r"`
	At      int64  `json:"a"` // Unix ms: requests older than maxConfirmAge are ignored
}

type heartbeat struct {
	Cluster string `json:"c"`
	From    string `json:"f"`
	At      int64  `json:"a"`
	Seq     uint64 `json:"q"`
}

type leaderMsg struct {
	Voter     string `json:"v"`
	Candidate string `json:"c"`
	Seq       uint64 `json:"q"`
}

type keyOp struct {
	Op  string `json:"o"` // install, use, remove
	Key []byte `json:"k"`
	ID  string `json:"i"` // unique id so that each node applies it once
	At  int64  `json:"a"` // Unix ms: operations older than maxKeyOpAge are refused (no replay of an old "use")
}

// sharedMsg carries a prober's admin state, stamped so that a replay of an
// old one (bringing back removed overrides) is refused.
type sharedMsg struct {
	At    int64  `json:"a"` // Unix ms
	State []byte `json:"s"`
}

// fullState is exchanged in push/pull syncs: the signed envelopes of every
// vote and summary, and the sender's admin state in its own envelope.
type fullState struct {
	Votes     [][]byte `json:"v"`
	Summaries [][]byte `json:"s"`
	Shared    []byte   `json:"a,omitempty"`
	RTT       [][]byte `json:"r,omitempty"` // the RTT summaries behind the entries held (rtt.go)
	Creds     [][]byte `json:"c,omitempty"` // the credentials of the nodes this one accepted, its own included (creds.go)
}
