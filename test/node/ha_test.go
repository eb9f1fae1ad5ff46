package node_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ltiop/ltiop/app"
)

const ltiopPods = "app.kubernetes.io/name=ltiop,app.kubernetes.io/component=manager"

// The chart's Redis.
const redisPods = "app.kubernetes.io/component=replay-store"

// haSpecs are the specs of three replicas on the chart's Redis: an upgrade under load and
// the faults, each with launches running. env gives the CA, the LMS and the Service's URL
// the earlier specs set up.
func haSpecs(env func() (*lmsCA, *lmsServer, string)) {
	ctx := context.Background()
	var haValues map[string]any
	newTag := ""

	// runLoad sends launches through the Service while during runs, then for settle more;
	// it returns the report.
	runLoad := func(scenario string, during func()) loadReport {
		ca, lms, base := env()
		l := startLoad(scenario, ca, lms, base, 2)
		Eventually(l.succeeded).Should(BeNumerically(">=", 5), func() string { return "launches succeed before the fault: " + l.snapshot() })
		during()
		okBefore := l.succeeded()
		Eventually(l.succeeded).Should(BeNumerically(">=", okBefore+10), func() string { return "launches succeed after it: " + l.snapshot() })
		return l.stop()
	}

	It("scales to three replicas on the chart's Redis (helm upgrade)", func() {
		haValues = installValues()
		haValues["replicas"] = 3
		haValues["replayStore"] = map[string]any{"redis": map[string]any{"enabled": true,
			"image": map[string]any{"repository": "docker.io/library/redis", "tag": "debian-ltiop-node", "pullPolicy": "Never"}}}
		// The NetworkPolicies too: the API server accepts them; the bridge CNI does not
		// enforce them (docs/install.md says which CNI would).
		_, lms, _ := env()
		lmsPort, portErr := strconv.Atoi(lms.URL[strings.LastIndex(lms.URL, ":")+1:])
		Expect(portErr).NotTo(HaveOccurred())
		haValues["networkPolicy"] = map[string]any{"enabled": true, "apiServer": map[string]any{"cidrs": []string{nodeIP + "/32"}},
			"extraEgress": []any{map[string]any{"to": []any{map[string]any{"ipBlock": map[string]any{"cidr": nodeIP + "/32"}}},
				"ports": []any{map[string]any{"port": lmsPort, "protocol": "TCP"}}}}}
		// The upgrade changes the replay store from memory to Redis, with launches running.
		// Measured, not asserted: during the rollout replicas of both stores serve, and a use
		// recorded in one is unknown to the other, so a replay can be accepted (reported in
		// docs/install.md, On a real node, and how to avoid it in Changing the replay store).
		switched := runLoad("helm upgrade: one replica on the memory store to three on the chart's Redis", func() {
			helm("upgrade", release, "charts/ltiop", "-n", helmNamespace, "-f", writeValues(haValues), "--wait", "--timeout", "4m")
			Eventually(func() int { return len(readyPods(ctx, ltiopPods)) }).Should(Equal(3))
			// The replicas of the in-memory store are gone, not only terminating.
			Eventually(func() int { return len(allPods(ctx, ltiopPods)) }).Should(Equal(3))
		})
		Expect(switched.failedOther).To(BeEmpty(), switched.String())
		Expect(readyPods(ctx, redisPods)).To(HaveLen(1))
		policies, err := clientset.NetworkingV1().NetworkPolicies(helmNamespace).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, p := range policies.Items {
			names = append(names, p.Name)
		}
		Expect(names).To(ConsistOf(release, release+"-redis"), "the chart's NetworkPolicies are applied")
		rep := runLoad("three replicas, steady", func() {})
		Expect(rep.replaysAccepted).To(BeZero(), rep.String())
		Expect(rep.failedOther).To(BeEmpty(), rep.String())
		Expect(rep.failedClosed).To(BeEmpty(), rep.String())
	})

	It("rolls the three pods to a new image tag with launches running: no launch fails, no replay is accepted", func() {
		_, tag := imageRepoTag()
		newTag = tag + "-next"
		out, err := command(true, "ctr", "--address", filepath.Join(stateDir, "containerd.sock"), "--namespace", "k8s.io", "images", "tag", "--force", imageRef, strings.TrimSuffix(imageRef, tag)+newTag)
		Expect(err).NotTo(HaveOccurred(), out)
		haValues["image"].(map[string]any)["tag"] = newTag
		file := writeValues(haValues)
		start := time.Now()
		rep := runLoad("helm upgrade to a new image tag, 3 replicas", func() {
			helm("upgrade", release, "charts/ltiop", "-n", helmNamespace, "-f", file, "--wait", "--timeout", "5m")
			GinkgoWriter.Printf("helm upgrade --wait: %s\n", time.Since(start).Round(time.Second))
		})
		pods := readyPods(ctx, ltiopPods)
		Expect(pods).To(HaveLen(3))
		for _, p := range pods {
			Expect(p.Spec.Containers[0].Image).To(HaveSuffix(":" + newTag))
		}
		Expect(rep.replaysAccepted).To(BeZero(), rep.String())
		Expect(rep.failedOther).To(BeEmpty(), rep.String())
		Expect(rep.failedClosed).To(BeEmpty(), rep.String())
	})

	It("keeps launching when the leader pod is deleted, and another replica takes the lease", func() {
		leader := readyLeader(ctx)
		rep := runLoad("leader pod deleted", func() {
			Expect(clientset.CoreV1().Pods(helmNamespace).Delete(ctx, leader, metav1.DeleteOptions{})).To(Succeed())
			Eventually(func() string { return leaderPod(ctx) }).ShouldNot(Or(Equal(leader), BeEmpty()), "a new leader")
			Eventually(func() int { return len(readyPods(ctx, ltiopPods)) }).Should(Equal(3))
		})
		Expect(rep.replaysAccepted).To(BeZero(), rep.String())
		Expect(rep.failedOther).To(BeEmpty(), rep.String())
		Expect(rep.failedClosed).To(BeEmpty(), rep.String())
	})

	It("keeps launching when a follower pod is deleted", func() {
		leader := readyLeader(ctx)
		var follower string
		for _, p := range readyPods(ctx, ltiopPods) {
			if p.Name != leader {
				follower = p.Name
			}
		}
		Expect(follower).NotTo(BeEmpty())
		rep := runLoad("follower pod deleted", func() {
			Expect(clientset.CoreV1().Pods(helmNamespace).Delete(ctx, follower, metav1.DeleteOptions{})).To(Succeed())
			Eventually(func() bool {
				_, err := clientset.CoreV1().Pods(helmNamespace).Get(ctx, follower, metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			}).Should(BeTrue())
			Eventually(func() int { return len(readyPods(ctx, ltiopPods)) }).Should(Equal(3))
		})
		Expect(leaderPod(ctx)).To(Equal(leader), "the leader stays")
		Expect(rep.replaysAccepted).To(BeZero(), rep.String())
		Expect(rep.failedOther).To(BeEmpty(), rep.String())
		Expect(rep.failedClosed).To(BeEmpty(), rep.String())
	})

	It("fails launches closed (503) while the Redis container is killed, and still refuses the launches from before it", func() {
		redis := readyPods(ctx, redisPods)
		Expect(redis).To(HaveLen(1))
		restarts := redis[0].Status.ContainerStatuses[0].RestartCount
		var before []replayable
		rep := runLoad("Redis container killed (SIGKILL)", func() {
			// Launches that succeeded before the kill, replayed once Redis is back.
			ca, lms, base := env()
			for range 5 {
				b := newBrowser(ca, base, appURL)
				a := b.launch(lms, "user=before-the-kill")
				Expect(a.ltik).NotTo(BeEmpty(), a.body)
				before = append(before, replayable{b, a})
			}
			// The process, as a crash or the OOM killer ends it: the kubelet restarts the
			// container in the same pod, on the same data volume (issue #34).
			pid := containerPID(redis[0].Status.ContainerStatuses[0].ContainerID)
			Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
			Eventually(func() bool {
				pods := readyPods(ctx, redisPods)
				return len(pods) == 1 && pods[0].Name == redis[0].Name && pods[0].Status.ContainerStatuses[0].RestartCount > restarts
			}).Should(BeTrue(), "the Redis container restarted in its pod, and is ready")
		})
		tried, accepted, failures := replayAll(before)
		GinkgoWriter.Printf("launches from before the kill replayed after it: %d tried, %d accepted, failures %v\n", tried, accepted, failures)
		AddReportEntry("replays across the Redis restart", fmt.Sprintf("%d tried, %d accepted", tried, accepted))
		Expect(rep.replaysAccepted).To(BeZero(), rep.String())
		Expect(rep.failedOther).To(BeEmpty(), rep.String(), "every failed launch failed closed")
		// The chart's Redis syncs each use to its append-only file before it answers, and
		// reads the file back when its container restarts.
		Expect(tried).To(Equal(len(before)))
		Expect(accepted).To(BeZero(), "launches recorded before the Redis restart were accepted again: %d of %d (failures %v)", accepted, tried, failures)
	})

	It("evicts the pods one by one as a drain does: the PDB holds the second eviction back, launches continue", func() {
		pods := readyPods(ctx, ltiopPods)
		Expect(pods).To(HaveLen(3))
		refused := 0
		rep := runLoad("pods evicted one by one (PDB maxUnavailable 1)", func() {
			for _, p := range pods {
				Eventually(func() error {
					err := clientset.PolicyV1().Evictions(helmNamespace).Evict(ctx, &policyv1.Eviction{
						ObjectMeta: metav1.ObjectMeta{Namespace: helmNamespace, Name: p.Name}})
					if apierrors.IsTooManyRequests(err) {
						refused++
					}
					return err
				}, 3*time.Minute, time.Second).Should(Succeed(), "evicting %s", p.Name)
			}
			Eventually(func() int { return len(readyPods(ctx, ltiopPods)) }, 3*time.Minute).Should(Equal(3))
		})
		GinkgoWriter.Printf("evictions refused by the PodDisruptionBudget: %d\n", refused)
		Expect(refused).To(BeNumerically(">", 0), "the PDB refused an eviction while a pod was down")
		Expect(rep.replaysAccepted).To(BeZero(), rep.String())
		Expect(rep.failedOther).To(BeEmpty(), rep.String())
		Expect(rep.failedClosed).To(BeEmpty(), rep.String())
	})

	platformSpecs(func() (*lmsCA, string, map[string]any) {
		ca, _, base := env()
		return ca, base, haValues
	})
}

// readyPods are the running, ready, not terminating pods of the release matching selector.
func readyPods(ctx context.Context, selector string) []corev1.Pod {
	var ready []corev1.Pod
	for _, p := range allPods(ctx, selector) {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = append(ready, p)
			}
		}
	}
	return ready
}

// readyLeader waits until a ready pod holds the controllers' Lease (after a rollout the
// lease is free for a moment: the old leader released it) and returns it.
func readyLeader(ctx context.Context) string {
	var leader string
	EventuallyWithOffset(1, func() bool {
		leader = leaderPod(ctx)
		for _, p := range readyPods(ctx, ltiopPods) {
			if p.Name == leader {
				return true
			}
		}
		return false
	}).Should(BeTrue(), "a ready pod leads the controllers")
	return leader
}

// allPods are the release's pods matching selector, terminating ones included.
func allPods(ctx context.Context, selector string) []corev1.Pod {
	list, err := clientset.CoreV1().Pods(helmNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	Expect(err).NotTo(HaveOccurred())
	return list.Items
}

// leaderPod is the pod holding the controllers' Lease ("" when none does).
func leaderPod(ctx context.Context) string {
	lease, err := clientset.CoordinationV1().Leases(helmNamespace).Get(ctx, app.LeaseName, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	pod, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	return pod
}
