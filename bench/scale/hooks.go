package main

import "context"

// row is one extra result line of a size: a measure's name, its value and
// unit, and a note (e.g. the reference it is compared with).
type row struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	Note  string  `json:"note,omitempty"`
}

// measure runs against the server of one size after the reloads (it is
// ready and serves the generated file: s.dnsAddr, s.httpBase, s.cfg,
// s.services; scalegen.Name(i) are its names) and returns its rows. An
// error fails the size, after the rows it returned are kept.
type measure func(ctx context.Context, s *server) ([]row, error)

// measures run in order for every size. HOOK: the QPS on distinct names
// against Knot serving the same names, and the time for a one-service
// change to be served, are added here.
var measures []measure
