package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// window is a stretch of the run whose controller requests are counted
// from the audit log (-audit).
type window struct{ from, to time.Time }

func (w window) holds(t time.Time) bool { return !t.Before(w.from) && !t.After(w.to) }

// auditRequests reads a kube-apiserver audit log (JSON audit.k8s.io/v1
// Events, one a line, as localcluster writes it with UpOptions.AuditLog)
// and counts, for each window, the requests made by the controller — the
// requests whose User-Agent starts with the controller binary's name, as
// client-go's default User-Agent does — by "verb resource[/subresource]";
// dry runs (server-side apply preflights) are counted apart, as
// "verb resource (dry run)", and so are reads answered 404, as
// "get resource (not found)": which read or write each Application costs,
// where the metrics count only methods.
func auditRequests(path, controller string, windows []window) ([]map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	defer f.Close()
	prefix := filepath.Base(controller) + "/"
	out := make([]map[string]float64, len(windows))
	for i := range out {
		out[i] = map[string]float64{}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Verb, RequestURI, UserAgent, Stage string
			ObjectRef                          struct{ Resource, Subresource string }
			ResponseStatus                     struct{ Code int }
			RequestReceivedTimestamp           time.Time
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("audit log %s: %w", path, err)
		}
		if ev.Stage != "ResponseComplete" || !strings.HasPrefix(ev.UserAgent, prefix) {
			continue
		}
		key := ev.Verb + " " + ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			key += "/" + ev.ObjectRef.Subresource
		}
		switch {
		case strings.Contains(ev.RequestURI, "dryRun=All"):
			key += " (dry run)"
		case isRead(strings.ToUpper(ev.Verb)) && ev.ResponseStatus.Code == 404:
			key += " (not found)"
		}
		for i, w := range windows {
			if w.holds(ev.RequestReceivedTimestamp) {
				out[i][key]++
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	return out, nil
}
