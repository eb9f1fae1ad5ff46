package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/simulators/integratorsim"
	"github.com/ltiop/ltiop/simulators/stdwebhook"
)

// startDemoPlatform serves the platform-mode half of the demo: the sample tool on
// toolListen and the integrator's platform app on appListen.
func startDemoPlatform(toolListen, appListen, ltiopURL, apiKey string) (*integratorsim.Platform, error) {
	key, err := stdwebhook.ParseSecret(demoWebhookSecret) // ltiop signs its data API calls with it
	if err != nil {
		return nil, err
	}
	toolLn, err := net.Listen("tcp", toolListen)
	if err != nil {
		return nil, fmt.Errorf("demo tool: %w", err)
	}
	appLn, err := net.Listen("tcp", appListen)
	if err != nil {
		toolLn.Close()
		return nil, fmt.Errorf("platform app: %w", err)
	}
	return integratorsim.StartPlatform(toolLn, appLn, "http://"+reachable(toolLn.Addr().String()),
		"http://"+reachable(appLn.Addr().String()), ltiopURL, apiKey, key)
}

// registerDemoTool has the demo tool register itself by dynamic registration, waits until
// its ToolRegistration is Ready, and gives the platform its client id.
func registerDemoTool(ctx context.Context, plat *integratorsim.Platform, k8s client.Client, namespace string) error {
	if err := plat.Register(ctx); err != nil {
		return err
	}
	name := integratorsim.ToolRegistrationName
	reg := &ltiv1.ToolRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	deadline := time.Now().Add(time.Minute)
	for {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(reg), reg); err != nil {
			return fmt.Errorf("reading ToolRegistration %s: %w", name, err)
		}
		ready := meta.FindStatusCondition(reg.Status.Conditions, ltiv1.ConditionReady)
		if ready != nil && ready.ObservedGeneration == reg.Generation {
			if ready.Status == metav1.ConditionTrue && reg.Status.ClientID != "" {
				break
			}
			if meta.IsStatusConditionTrue(reg.Status.Conditions, ltiv1.ConditionStalled) {
				return fmt.Errorf("ToolRegistration %s is not Ready: %s: %s", name, ready.Reason, ready.Message)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ToolRegistration %s was not Ready after a minute (conditions: %+v)", name, reg.Status.Conditions)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	plat.ClientID = reg.Status.ClientID
	return nil
}
