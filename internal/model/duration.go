package model

import (
	"fmt"
	"time"
)

// Duration is a time.Duration written in the config as a Go duration
// string: 500ms, 5s, 1m30s.
type Duration time.Duration

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return &ValueError{Value: string(b), Msg: fmt.Sprintf("%q is not a duration (write it like 500ms, 5s or 1m30s)", string(b))}
	}
	if v < 0 {
		return &ValueError{Value: string(b), Msg: fmt.Sprintf("%q is negative", string(b))}
	}
	*d = Duration(v)
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// ValueError is a scalar the decoder could not convert. The config loader
// finds Value in the file to report its line and field.
type ValueError struct {
	Value string
	Msg   string
}

func (e *ValueError) Error() string { return e.Msg }
