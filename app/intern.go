package app

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// cacheTransform is what every cached object goes through before it is stored: its
// managedFields dropped (nothing reads them; writes are server-side applies: at 10,000
// registrations and their key Secrets they are tens of MB), and the strings thousands of
// objects repeat stored once (internStrings).
func cacheTransform() toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	return func(obj any) (any, error) {
		obj, err := strip(obj)
		if err == nil {
			internStrings(obj)
		}
		return obj, err
	}
}

// internStrings makes the strings every registration and key Secret repeat (namespace,
// label keys, owner kinds, Secret type and data keys, status URLs, condition reasons and
// messages) share one copy each: decoding gives every object its own, some 400 bytes a
// registration. Names and other strings of one object only are left alone: interning
// costs an entry in the process's table (unique), which holds only strings still in use.
func internStrings(obj any) {
	if o, ok := obj.(metav1.Object); ok {
		internMeta(o)
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		o.Type = corev1.SecretType(intern(string(o.Type)))
		o.Data = internKeys(o.Data)
	case *ltiv1.PlatformRegistration:
		o.Spec.AuthConfig.Method = ltiv1.AuthMethod(intern(string(o.Spec.AuthConfig.Method)))
		o.Status.LoginURL, o.Status.LaunchURL = intern(o.Status.LoginURL), intern(o.Status.LaunchURL)
		internConditions(o.Status.Conditions)
	case *ltiv1.ToolRegistration:
		internConditions(o.Status.Conditions)
	}
}

func internMeta(o metav1.Object) {
	o.SetNamespace(intern(o.GetNamespace()))
	if l := o.GetLabels(); len(l) > 0 {
		out := make(map[string]string, len(l))
		for k, v := range l {
			out[intern(k)] = v
		}
		o.SetLabels(out)
	}
	if refs := o.GetOwnerReferences(); len(refs) > 0 {
		for i := range refs {
			refs[i].APIVersion, refs[i].Kind = intern(refs[i].APIVersion), intern(refs[i].Kind)
		}
	}
}

func internConditions(cs []metav1.Condition) {
	for i := range cs {
		c := &cs[i]
		c.Type, c.Reason, c.Message = intern(c.Type), intern(c.Reason), intern(c.Message)
	}
}

// internKeys returns m with its keys interned (the values are the object's own).
func internKeys[V any](m map[string]V) map[string]V {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[intern(k)] = v
	}
	return out
}

func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}
