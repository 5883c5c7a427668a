package localcluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClusterNames(t *testing.T) {
	cases := map[string]struct {
		reason  string
		n       int
		want    []string
		wantErr bool
	}{
		"HubOnly":  {reason: "one cluster is the hub alone", n: 1, want: []string{"local"}},
		"ThreeSet": {reason: "members are numbered from 1", n: 3, want: []string{"local", "member-1", "member-2"}},
		"Max":      {reason: "the maximum is allowed", n: MaxClusters, want: nil},
		"Zero":     {reason: "a set has at least the hub", n: 0, wantErr: true},
		"Negative": {reason: "negative counts are rejected", n: -2, wantErr: true},
		"TooMany":  {reason: "more than MaxClusters is rejected", n: MaxClusters + 1, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ClusterNames(tc.n)
			if tc.wantErr {
				require.Error(t, err, tc.reason)
				return
			}
			require.NoError(t, err, tc.reason)
			require.Len(t, got, tc.n, tc.reason)
			if tc.want != nil {
				assert.Equal(t, tc.want, got, tc.reason)
			}
			for _, n := range got {
				assert.NoError(t, ValidateName(n), "generated names are valid")
			}
		})
	}
}

func TestValidateName(t *testing.T) {
	cases := map[string]struct {
		reason string
		name   string
		ok     bool
	}{
		"Hub":           {reason: "the hub name", name: "local", ok: true},
		"Member":        {reason: "a member", name: "member-1", ok: true},
		"MemberNine":    {reason: "the last possible member", name: "member-9", ok: true},
		"MemberZero":    {reason: "members start at 1", name: "member-0"},
		"LeadingZero":   {reason: "one spelling per member", name: "member-01"},
		"TooHigh":       {reason: "beyond MaxClusters", name: "member-10"},
		"Prefixed":      {reason: "names are given without the prefix", name: "oamflow-local"},
		"Empty":         {reason: "empty", name: ""},
		"PathTraversal": {reason: "names become paths", name: "../local"},
		"NoNumber":      {reason: "member needs a number", name: "member-"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := ValidateName(tc.name)
			if tc.ok {
				assert.NoError(t, err, tc.reason)
			} else {
				assert.Error(t, err, tc.reason)
			}
		})
	}
}

func TestValidatePrefix(t *testing.T) {
	cases := map[string]struct {
		reason string
		prefix string
		ok     bool
	}{
		"Default":    {reason: "the default prefix", prefix: DefaultNamePrefix, ok: true},
		"Empty":      {reason: "no prefix at all", prefix: "", ok: true},
		"Digits":     {reason: "digits and dashes", prefix: "e2e-1-", ok: true},
		"Upper":      {reason: "names are DNS labels", prefix: "Oam-"},
		"Underscore": {reason: "no underscores", prefix: "oam_"},
		"LeadDash":   {reason: "must start with a letter or digit", prefix: "-oam"},
		"Slash":      {reason: "prefixes become paths", prefix: "a/b"},
		"TooLong":    {reason: "keeps names within a DNS label", prefix: "abcdefghijabcdefghijabcdefghijabcdefghijx"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := ValidatePrefix(tc.prefix)
			if tc.ok {
				assert.NoError(t, err, tc.reason)
			} else {
				assert.Error(t, err, tc.reason)
			}
		})
	}
}
