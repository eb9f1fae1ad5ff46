package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// eventsOn are the Events on the object named name in namespace ns whose reason is reason
// ("": any reason).
func eventsOn(ns, name, reason string) []eventsv1.Event {
	var list eventsv1.EventList
	ExpectWithOffset(1, k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name && (reason == "" || e.Reason == reason) {
			out = append(out, e)
		}
	}
	return out
}

// printedColumns is what kubectl get prints for the lti.ltiop.dev object resource/ns/name
// (the API server's Table, the CRD's printer columns, -o wide's included): column name →
// cell.
func printedColumns(resource, ns, name string) map[string]any {
	hc, err := rest.HTTPClientFor(restCfg)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(restCfg.Host, "/")+"/apis/lti.ltiop.dev/v1alpha1/namespaces/"+ns+"/"+resource+"/"+name, nil)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	res, err := hc.Do(req)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	ExpectWithOffset(1, res.StatusCode).To(Equal(http.StatusOK), req.URL.String()+" "+string(body))
	var table struct {
		ColumnDefinitions []struct{ Name string } `json:"columnDefinitions"`
		Rows              []struct{ Cells []any } `json:"rows"`
	}
	ExpectWithOffset(1, json.Unmarshal(body, &table)).To(Succeed())
	ExpectWithOffset(1, table.Rows).To(HaveLen(1))
	out := map[string]any{}
	for i, c := range table.ColumnDefinitions {
		out[c.Name] = table.Rows[0].Cells[i]
	}
	return out
}

// flushedHealth flushes the suite's launch health and reads PlatformRegistration name into
// reg: its status.launchHealth once written (g fails while it is not).
func flushedHealth(ctx context.Context, g Gomega, name string, reg *ltiv1.PlatformRegistration) *ltiv1.LaunchHealth {
	ltiop.LaunchHealth.Flush(ctx)
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, reg)).To(Succeed())
	g.Expect(reg.Status.LaunchHealth).NotTo(BeNil())
	return reg.Status.LaunchHealth
}
