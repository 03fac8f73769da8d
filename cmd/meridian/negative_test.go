package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestANegativeNumberIsAPositionalArgument(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"a negative weight goes after --, the flags before it",
			[]string{"weight", "app.test", "192.0.2.1", "-1", "--reason", "r"},
			[]string{"weight", "--reason", "r", "--", "app.test", "192.0.2.1", "-1"}},
		{"a flag's value stays the flag's even when it looks negative",
			[]string{"drain", "cluster", "east", "--for", "-5m", "--reason", "r", "-9"},
			[]string{"drain", "--for", "-5m", "--reason", "r", "--", "cluster", "east", "-9"}},
		{"a persistent flag before the command is kept with its value",
			[]string{"--ca-file", "ca.pem", "weight", "app.test", "192.0.2.1", "-2.5"},
			[]string{"weight", "--ca-file", "ca.pem", "--", "app.test", "192.0.2.1", "-2.5"}},
		{"arguments without a negative number are left as they are",
			[]string{"weight", "app.test", "192.0.2.1", "5", "--reason", "r"},
			[]string{"weight", "app.test", "192.0.2.1", "5", "--reason", "r"}},
		{"arguments that already hold -- are left as they are",
			[]string{"weight", "--reason", "r", "--", "app.test", "192.0.2.1", "-1"},
			[]string{"weight", "--reason", "r", "--", "app.test", "192.0.2.1", "-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, negativeNumbersAsArgs(newRoot(), tc.args))
		})
	}
}

func TestMeridianWeightMinusOneIsARangeError(t *testing.T) {
	for _, tc := range []struct {
		weight, want string
	}{
		{"-1", "weight -1 is out of range (allowed: 0..1000)"},
		{"5000", "weight 5000 is out of range (allowed: 0..1000)"},
		{"x", `weight "x" is not an integer (allowed: 0..1000)`},
	} {
		t.Run(tc.weight, func(t *testing.T) {
			root := newRoot()
			root.SetArgs(negativeNumbersAsArgs(root, []string{"weight", "app.test", "192.0.2.1", tc.weight, "--reason", "r", "--http", "127.0.0.1:1"}))
			err := root.Execute()
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}
