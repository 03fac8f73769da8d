package ring

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
)

// Every message a node originates travels in a signed envelope, and relays
// and push/pull syncs pass the envelope on unchanged, so a receiver always
// checks the originator's own signature whoever delivered it:
//
//	[0]        message type (msgVote, ...)
//	[1]        envelope version (1)
//	[2]        n = length of the origin node name (1..MaxNodeName)
//	[3:3+n]    origin node name
//	[+64]      Ed25519 signature over sigDomain, type, origin, 0, payload
//	[rest]     payload: the message as JSON
const (
	envVersion = 1
	sigDomain  = "meridian-ring-v1\x00"
	envHeader  = 3
)

// Limits on what a receiver decodes at all.
const (
	maxMessage = 16 << 10 // one broadcast (they fit a UDP packet; this is generous)
	maxShared  = 1 << 20  // the admin state, in a broadcast or a sync
	maxState   = 64 << 20 // a whole push/pull state
)

type envelope struct {
	t       byte
	origin  string
	sig     []byte
	payload []byte
	exempt  bool // from a pull reply whose challenge matched: checked outside the budget (budget.go)
}

func sigInput(t byte, origin string, payload []byte) []byte {
	b := make([]byte, 0, len(sigDomain)+2+len(origin)+len(payload))
	b = append(b, sigDomain...)
	b = append(b, t)
	b = append(b, origin...)
	b = append(b, 0)
	return append(b, payload...)
}

// seal encodes v as a message of type t from origin, signed by id.
func seal(id Identity, t byte, origin string, v any) []byte {
	payload, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("ring: encode %T: %v", v, err)) // only our own plain structs
	}
	sig := id.Sign(sigInput(t, origin, payload))
	b := make([]byte, 0, envHeader+len(origin)+len(sig)+len(payload))
	b = append(b, t, envVersion, byte(len(origin)))
	b = append(b, origin...)
	b = append(b, sig...)
	return append(b, payload...)
}

var (
	errShort   = errors.New("shorter than an envelope")
	errVersion = errors.New("unknown envelope version")
	errOrigin  = errors.New("origin name empty or too long")
)

// openEnvelope splits b into its parts without checking the signature.
// The parts alias b.
func openEnvelope(b []byte) (envelope, error) {
	if len(b) < envHeader {
		return envelope{}, errShort
	}
	if b[1] != envVersion {
		return envelope{}, errVersion
	}
	n := int(b[2])
	if n == 0 {
		return envelope{}, errOrigin
	}
	if len(b) < envHeader+n+ed25519.SignatureSize+2 { // payload is at least "{}"
		return envelope{}, errShort
	}
	e := envelope{t: b[0], origin: string(b[envHeader : envHeader+n])}
	e.sig = b[envHeader+n : envHeader+n+ed25519.SignatureSize]
	e.payload = b[envHeader+n+ed25519.SignatureSize:]
	return e, nil
}

// verify checks the envelope's signature with pub.
func (e envelope) verify(pub ed25519.PublicKey) bool {
	return ed25519.Verify(pub, sigInput(e.t, e.origin, e.payload), e.sig)
}

// decodePayload decodes the JSON payload strictly: one value, nothing after it.
func (e envelope) decodePayload(v any) error {
	d := json.NewDecoder(bytes.NewReader(e.payload))
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("data after the message")
	}
	return nil
}
