package deploy

import (
	"fmt"
	"testing"
)

// What a cluster admin expects of a chart's operations (issue #35 §3): labels on every
// object, objects of one's own installed with the release, a history to roll back to, and a
// startup probe so that a slow start is not taken for a hang.
func TestChartOperationsValues(t *testing.T) {
	objs := render(t, map[string]any{
		"replayStore":  map[string]any{"redis": map[string]any{"enabled": true}},
		"commonLabels": map[string]any{"team": "lti", "cost-centre": "42"},
		"extraObjects": []any{
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra-from-string\n  namespace: '{{ .Release.Namespace }}'\n",
			map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "extra-from-map"}, "data": map[string]any{"release": "{{ .Release.Name }}"}},
		},
		"revisionHistoryLimit": 3,
	})
	for _, o := range objs {
		switch {
		case o.GetKind() == "CustomResourceDefinition", o.GetName() == "extra-from-string", o.GetName() == "extra-from-map":
			continue
		}
		if l := o.GetLabels(); l["team"] != "lti" || l["cost-centre"] != "42" {
			t.Errorf("%s %s: labels %v lack commonLabels", o.GetKind(), o.GetName(), l)
		}
	}
	if s := objs.Find("ConfigMap", "extra-from-string"); s == nil || s.GetNamespace() != chartNamespace {
		t.Errorf("the extra object given as a template string: %v", s)
	}
	if m := objs.Find("ConfigMap", "extra-from-map"); m == nil || nested(t, m, "data", "release") != "ltiop" {
		t.Errorf("the extra object given as a map, its strings rendered: %v", m)
	}
	deploy := objs.Find("Deployment", "ltiop")
	if got := fmt.Sprint(nested(t, deploy, "spec", "revisionHistoryLimit")); got != "3" {
		t.Errorf("revisionHistoryLimit %v, want 3", got)
	}
	c := ltiopContainer(t, objs)
	startup, _ := c["startupProbe"].(map[string]any)
	if startup == nil || startup["httpGet"].(map[string]any)["path"] != "/livez" || fmt.Sprint(startup["failureThreshold"]) != "30" || fmt.Sprint(startup["periodSeconds"]) != "2" {
		t.Errorf("startupProbe %v, want /livez every 2s, 30 times", startup)
	}
	if _, delayed := c["livenessProbe"].(map[string]any)["initialDelaySeconds"]; delayed {
		t.Error("the liveness probe still waits a fixed delay: the startup probe gates it")
	}
}
