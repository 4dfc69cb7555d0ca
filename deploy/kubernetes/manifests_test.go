// Package kubernetes_test checks the Kustomize base offline: every manifest
// decodes strictly into the Kubernetes API types of k8s.io/api (an unknown
// or misspelt field fails, as `kubectl apply --validate=strict` would), the
// ServiceMonitor and the PrometheusRule into reviewed subsets of the
// Prometheus Operator's types, and the objects fit together (selectors,
// ports, probes, grace period, the generated ConfigMap and Secret, the
// metrics the alerts name).
package kubernetes_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// kustomization is the part of kustomize's Kustomization this base uses;
// anything else in the file is an error (strict decoding).
type kustomization struct {
	APIVersion         string      `json:"apiVersion"`
	Kind               string      `json:"kind"`
	Resources          []string    `json:"resources"`
	ConfigMapGenerator []generator `json:"configMapGenerator"`
	SecretGenerator    []generator `json:"secretGenerator"`
	GeneratorOptions   *struct {
		Labels                map[string]string `json:"labels,omitempty"`
		DisableNameSuffixHash bool              `json:"disableNameSuffixHash,omitempty"`
	} `json:"generatorOptions,omitempty"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images,omitempty"`
}

// generator is a configMapGenerator or secretGenerator entry (the fields
// of kustomize's GeneratorArgs this base uses).
type generator struct {
	Name     string   `json:"name"`
	Behavior string   `json:"behavior,omitempty"`
	Envs     []string `json:"envs,omitempty"`
	Files    []string `json:"files,omitempty"`
	Literals []string `json:"literals,omitempty"`
	Options  *struct {
		DisableNameSuffixHash bool `json:"disableNameSuffixHash,omitempty"`
	} `json:"options,omitempty"`
}

// serviceMonitor is the subset of monitoring.coreos.com/v1 ServiceMonitor
// this base uses, field names as in the operator's CRD (reviewed against
// its API reference); a field outside it fails the test.
type serviceMonitor struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path,omitempty"`
			Interval      string `json:"interval,omitempty"`
			ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// newObject returns the Go type of a manifest's apiVersion and kind.
func newObject(apiVersion, kind string) (any, error) {
	switch apiVersion + "/" + kind {
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1/Service":
		return &corev1.Service{}, nil
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, nil
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "autoscaling/v2/HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}, nil
	case "networking.k8s.io/v1/NetworkPolicy":
		return &networkingv1.NetworkPolicy{}, nil
	case "monitoring.coreos.com/v1/ServiceMonitor":
		return &serviceMonitor{}, nil
	case "monitoring.coreos.com/v1/PrometheusRule":
		return &prometheusRule{}, nil
	}
	return nil, fmt.Errorf("no type known for %s %s", apiVersion, kind)
}

// decode decodes one manifest strictly into its API type.
func decode(doc []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	obj, err := newObject(tm.APIVersion, tm.Kind)
	if err != nil {
		return nil, err
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	return obj, nil
}

// base is the decoded base: the kustomization and its resources by kind
// and name.
type base struct {
	k       kustomization
	objects map[string]any // "Kind/name"
}

func loadBase(t *testing.T) base {
	t.Helper()
	raw, err := os.ReadFile("kustomization.yaml")
	require.NoError(t, err)
	b := base{objects: map[string]any{}}
	require.NoError(t, yaml.UnmarshalStrict(raw, &b.k), "kustomization.yaml")
	require.Equal(t, "kustomize.config.k8s.io/v1beta1", b.k.APIVersion)
	require.Equal(t, "Kustomization", b.k.Kind)

	// Every YAML file here is a resource of the base, and the other way
	// round: a manifest left out of the list would never be applied.
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	files = slices.DeleteFunc(files, func(f string) bool { return f == "kustomization.yaml" })
	assert.ElementsMatch(t, files, b.k.Resources, "kustomization.yaml lists every manifest")

	for _, f := range b.k.Resources {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		require.False(t, bytes.Contains(raw, []byte("\n---")), "%s: one object per file", f)
		obj, err := decode(raw)
		require.NoError(t, err, f)
		meta := objectMeta(obj)
		require.NotEmpty(t, meta.Name, f)
		key := fmt.Sprintf("%T/%s", obj, meta.Name)
		require.NotContains(t, b.objects, key, "%s: duplicate", f)
		b.objects[key] = obj
	}
	return b
}

func objectMeta(obj any) metav1.ObjectMeta {
	switch o := obj.(type) {
	case *serviceMonitor:
		return o.Metadata
	case *prometheusRule:
		return o.Metadata
	case metav1.Object:
		return metav1.ObjectMeta{Name: o.GetName(), Labels: o.GetLabels()}
	}
	return metav1.ObjectMeta{}
}

func get[T any](t *testing.T, b base, name string) T {
	t.Helper()
	var zero T
	o, ok := b.objects[fmt.Sprintf("%T/%s", zero, name)].(T)
	require.True(t, ok, "the base has no %T %q", zero, name)
	return o
}

// TestStrictDecodingCatchesTypos: the decoding the other tests rely on
// refuses a misspelt field, a field at the wrong level and an unknown kind.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	raw, err := os.ReadFile("deployment.yaml")
	require.NoError(t, err)
	_, err = decode(raw)
	require.NoError(t, err)
	for name, mutated := range map[string]string{
		"misspelt":       strings.Replace(string(raw), "revisionHistoryLimit: 5", "revisionHistoryLimt: 5", 1),
		"wrong level":    strings.Replace(string(raw), "      automountServiceAccountToken: false", "      automountServiceAccountToken: false\n      readOnlyRootFilesystem: true", 1),
		"duplicate key":  strings.Replace(string(raw), "revisionHistoryLimit: 5", "revisionHistoryLimit: 5\n  revisionHistoryLimit: 3", 1),
		"unknown kind":   strings.Replace(string(raw), "kind: Deployment", "kind: Deploymnet", 1),
		"bad quantities": strings.Replace(string(raw), "memory: 320Mi", "memory: 320 MB", 1),
	} {
		require.NotEqual(t, string(raw), mutated, name)
		_, err := decode([]byte(mutated))
		assert.Error(t, err, name)
	}
	var sm serviceMonitor
	raw, err = os.ReadFile("servicemonitor.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(raw, &sm))
	assert.Error(t, yaml.UnmarshalStrict([]byte(strings.Replace(string(raw), "path:", "metricsPath:", 1)), &sm))
}

func env(c corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

func envDuration(t *testing.T, c corev1.Container, name string) time.Duration {
	t.Helper()
	e, ok := env(c, name)
	require.True(t, ok, "%s is set", name)
	d, err := time.ParseDuration(e.Value)
	require.NoError(t, err, name)
	return d
}

func namedPort(c corev1.Container, name string) (corev1.ContainerPort, bool) {
	for _, p := range c.Ports {
		if p.Name == name {
			return p, true
		}
	}
	return corev1.ContainerPort{}, false
}

// selects reports whether sel matches every label it names in labels.
func selects(sel map[string]string, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestDeployment(t *testing.T) {
	b := loadBase(t)
	d := get[*appsv1.Deployment](t, b, "soapbridge")
	pod := d.Spec.Template
	assert.True(t, selects(d.Spec.Selector.MatchLabels, pod.Labels), "the selector matches the pods")
	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]

	// Probes on the admin listener, which listens beyond loopback.
	admin, ok := namedPort(c, "admin")
	require.True(t, ok)
	al, ok := env(c, "SOAPBRIDGE_ADMIN_LISTEN")
	require.True(t, ok)
	assert.Equal(t, fmt.Sprintf("0.0.0.0:%d", admin.ContainerPort), al.Value, "the kubelet reaches the admin port")
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
		require.NotNil(t, p, name)
		require.NotNil(t, p.HTTPGet, name)
		assert.Equal(t, intstr.FromString("admin"), p.HTTPGet.Port, name)
	}
	assert.Equal(t, "/livez", c.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, "/livez", c.StartupProbe.HTTPGet.Path)
	httpPort, ok := namedPort(c, "http")
	require.True(t, ok)
	l, ok := env(c, "SOAPBRIDGE_LISTEN")
	require.True(t, ok)
	assert.Equal(t, fmt.Sprintf(":%d", httpPort.ContainerPort), l.Value)

	// Secrets: the DSN from a Secret key, the merchants' file from a
	// Secret volume; no secret value written in the manifests.
	dsn, ok := env(c, "SOAPBRIDGE_DATABASE")
	require.True(t, ok)
	require.NotNil(t, dsn.ValueFrom)
	require.NotNil(t, dsn.ValueFrom.SecretKeyRef, "the DSN comes from a Secret")
	cfg, ok := env(c, "SOAPBRIDGE_CONFIG")
	require.True(t, ok)
	var fromSecret bool
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(cfg.Value, m.MountPath+"/") {
			for _, v := range pod.Spec.Volumes {
				if v.Name == m.Name && v.Secret != nil {
					fromSecret = slices.ContainsFunc(v.Secret.Items, func(k corev1.KeyToPath) bool {
						return m.MountPath+"/"+k.Path == cfg.Value
					})
				}
			}
		}
	}
	assert.True(t, fromSecret, "SOAPBRIDGE_CONFIG names a file of a Secret volume")
	for _, e := range c.Env {
		assert.True(t, strings.HasPrefix(e.Name, "SOAPBRIDGE_"), e.Name)
		for _, secret := range []string{"SECRET", "SECURE_KEY", "CLIENT_ID", "GOID"} {
			assert.NotContains(t, e.Name, secret, "merchants come from the Secret's file, not plain variables")
		}
	}
	require.Len(t, c.EnvFrom, 1)
	require.NotNil(t, c.EnvFrom[0].ConfigMapRef)

	// Graceful termination outlasts the preStop pause, the shutdown
	// timeout and a call started at its last moment.
	deadline := envDuration(t, c, "SOAPBRIDGE_CALL_DEADLINE")
	rest := envDuration(t, c, "SOAPBRIDGE_REST_TIMEOUT")
	shutdown := envDuration(t, c, "SOAPBRIDGE_SHUTDOWN_TIMEOUT")
	assert.GreaterOrEqual(t, shutdown, deadline+rest, "the bridge refuses a shutdown timeout under the call deadline plus the REST timeout")
	require.NotNil(t, c.Lifecycle)
	require.NotNil(t, c.Lifecycle.PreStop)
	require.NotNil(t, c.Lifecycle.PreStop.Sleep, "no shell in the image: the kubelet's sleep")
	preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	require.NotNil(t, pod.Spec.TerminationGracePeriodSeconds)
	grace := time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	assert.Greater(t, grace, preStop+deadline+shutdown, "terminationGracePeriodSeconds")

	// Non-root, read-only root file system, nothing extra.
	psc := pod.Spec.SecurityContext
	require.NotNil(t, psc)
	require.NotNil(t, psc.RunAsNonRoot)
	assert.True(t, *psc.RunAsNonRoot)
	require.NotNil(t, psc.RunAsUser)
	assert.NotZero(t, *psc.RunAsUser)
	sc := c.SecurityContext
	require.NotNil(t, sc)
	require.NotNil(t, sc.ReadOnlyRootFilesystem)
	assert.True(t, *sc.ReadOnlyRootFilesystem)
	require.NotNil(t, sc.AllowPrivilegeEscalation)
	assert.False(t, *sc.AllowPrivilegeEscalation)
	require.NotNil(t, sc.Capabilities)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	require.NotNil(t, pod.Spec.AutomountServiceAccountToken)
	assert.False(t, *pod.Spec.AutomountServiceAccountToken, "the bridge never talks to the API server")

	// Requests and limits set, limits above requests, and the memory
	// limit above the Go heap cap the bridge sets by default (192 MiB)
	// plus what is outside the heap.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, ok := c.Resources.Requests[r]
		require.True(t, ok, "request %s", r)
		lim, ok := c.Resources.Limits[r]
		require.True(t, ok, "limit %s", r)
		assert.Positive(t, req.Cmp(resource.Quantity{}), "request %s", r)
		assert.Positive(t, lim.Cmp(req), "limit %s over the request", r)
	}
	memLimit := c.Resources.Limits[corev1.ResourceMemory]
	assert.Positive(t, memLimit.Cmp(resource.MustParse("256Mi")), "memory limit leaves room over GOMEMLIMIT=192MiB")
}

func TestServicesKeepTheAdminPortInside(t *testing.T) {
	b := loadBase(t)
	d := get[*appsv1.Deployment](t, b, "soapbridge")
	podLabels := d.Spec.Template.Labels
	c := d.Spec.Template.Spec.Containers[0]
	admin, _ := namedPort(c, "admin")

	svc := get[*corev1.Service](t, b, "soapbridge")
	assert.Equal(t, corev1.ServiceTypeClusterIP, svc.Spec.Type)
	assert.True(t, selects(svc.Spec.Selector, podLabels))
	require.NotEmpty(t, svc.Spec.Ports)
	for _, p := range svc.Spec.Ports {
		assert.NotEqual(t, intstr.FromString("admin"), p.TargetPort, "the public Service never carries the admin port")
		assert.NotEqual(t, intstr.FromInt32(admin.ContainerPort), p.TargetPort)
		assert.Equal(t, intstr.FromString("http"), p.TargetPort)
	}

	adm := get[*corev1.Service](t, b, "soapbridge-admin")
	assert.Equal(t, corev1.ServiceTypeClusterIP, adm.Spec.Type)
	assert.Equal(t, corev1.ClusterIPNone, adm.Spec.ClusterIP, "headless: one scrape target per pod")
	assert.True(t, selects(adm.Spec.Selector, podLabels))
	require.Len(t, adm.Spec.Ports, 1)
	assert.Equal(t, intstr.FromString("admin"), adm.Spec.Ports[0].TargetPort)

	sm := get[*serviceMonitor](t, b, "soapbridge")
	assert.True(t, selects(sm.Spec.Selector.MatchLabels, adm.Labels), "the ServiceMonitor selects the admin Service")
	assert.False(t, selects(sm.Spec.Selector.MatchLabels, svc.Labels), "and not the public one")
	require.Len(t, sm.Spec.Endpoints, 1)
	assert.Equal(t, adm.Spec.Ports[0].Name, sm.Spec.Endpoints[0].Port)
	assert.Equal(t, "/metrics", sm.Spec.Endpoints[0].Path)

	np := get[*networkingv1.NetworkPolicy](t, b, "soapbridge")
	assert.True(t, selects(np.Spec.PodSelector.MatchLabels, podLabels))
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port != nil && *p.Port == intstr.FromString("admin") {
				assert.NotEmpty(t, rule.From, "the admin port is open only to named peers")
			}
		}
	}
}

func TestDisruptionAndScaling(t *testing.T) {
	b := loadBase(t)
	d := get[*appsv1.Deployment](t, b, "soapbridge")
	pdb := get[*policyv1.PodDisruptionBudget](t, b, "soapbridge")
	require.NotNil(t, pdb.Spec.Selector)
	assert.True(t, selects(pdb.Spec.Selector.MatchLabels, d.Spec.Template.Labels))
	hpa := get[*autoscalingv2.HorizontalPodAutoscaler](t, b, "soapbridge")
	assert.Equal(t, "Deployment", hpa.Spec.ScaleTargetRef.Kind)
	assert.Equal(t, d.Name, hpa.Spec.ScaleTargetRef.Name)
	require.NotNil(t, hpa.Spec.MinReplicas)
	assert.GreaterOrEqual(t, *hpa.Spec.MinReplicas, int32(2))
	assert.Greater(t, hpa.Spec.MaxReplicas, *hpa.Spec.MinReplicas)
	// The autoscaler alone sets the count: a replicas field beside it
	// would reset the count at every apply.
	assert.Nil(t, d.Spec.Replicas, "no replicas field beside the HorizontalPodAutoscaler")
	raw, err := os.ReadFile("deployment.yaml")
	require.NoError(t, err)
	assert.NotRegexp(t, `(?m)^\s*replicas:`, string(raw))

	require.NotNil(t, pdb.Spec.MaxUnavailable)
	assert.Less(t, pdb.Spec.MaxUnavailable.IntValue(), int(*hpa.Spec.MinReplicas), "a drain leaves a replica serving")
	require.NotEmpty(t, hpa.Spec.Metrics)
	_, hasCPURequest := d.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
	assert.True(t, hasCPURequest, "CPU utilization needs a CPU request")

	// The most pods that can run at once (the autoscaler's most, plus the
	// rollout's surge) is what each pod checks its database connections
	// and its share of the merchants' rates against.
	require.NotNil(t, d.Spec.Strategy.RollingUpdate)
	require.NotNil(t, d.Spec.Strategy.RollingUpdate.MaxSurge)
	most := int(hpa.Spec.MaxReplicas) + d.Spec.Strategy.RollingUpdate.MaxSurge.IntValue()
	assert.Equal(t, strconv.Itoa(most), envFile(t, "soapbridge.env")["SOAPBRIDGE_MAX_REPLICAS"],
		"SOAPBRIDGE_MAX_REPLICAS is the HPA's maxReplicas plus the Deployment's maxSurge")
}

// envFile reads a Kustomize env file: KEY=VALUE lines, # comments.
func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		require.True(t, ok, "%s: %q is not KEY=VALUE", path, line)
		require.NotContains(t, out, k, "%s: %s twice", path, k)
		out[k] = v
	}
	require.NoError(t, sc.Err())
	return out
}

// TestGeneratedConfigMapAndSecret: the ConfigMap and the Secret are
// generated with a content hash in their names (so an edit rolls the
// pods), the Deployment refers to them by the generators' names (Kustomize
// rewrites those to the hashed ones), and the Secret's sources are never
// committed.
func TestGeneratedConfigMapAndSecret(t *testing.T) {
	b := loadBase(t)
	for _, obj := range b.objects {
		switch obj.(type) {
		case *corev1.ConfigMap, *corev1.Secret:
			t.Errorf("%T as a plain resource: an edit would not roll the pods; use a generator", obj)
		}
	}
	if o := b.k.GeneratorOptions; o != nil {
		assert.False(t, o.DisableNameSuffixHash, "the hash is what rolls the pods")
	}
	require.Len(t, b.k.ConfigMapGenerator, 1)
	require.Len(t, b.k.SecretGenerator, 1)
	cmg, sg := b.k.ConfigMapGenerator[0], b.k.SecretGenerator[0]
	for _, g := range []generator{cmg, sg} {
		if g.Options != nil {
			assert.False(t, g.Options.DisableNameSuffixHash, g.Name)
		}
		assert.Empty(t, g.Behavior, "the base creates; overlays merge or replace")
	}

	d := get[*appsv1.Deployment](t, b, "soapbridge")
	c := d.Spec.Template.Spec.Containers[0]
	assert.Equal(t, cmg.Name, c.EnvFrom[0].ConfigMapRef.Name)

	// The settings: SOAPBRIDGE_ variables, no secret among them.
	require.Equal(t, []string{"soapbridge.env"}, cmg.Envs)
	assert.Empty(t, cmg.Files)
	assert.Empty(t, cmg.Literals)
	settings := envFile(t, "soapbridge.env")
	require.NotEmpty(t, settings)
	for k := range settings {
		assert.True(t, strings.HasPrefix(k, "SOAPBRIDGE_"), "the ConfigMap holds settings only: %s", k)
		assert.NotContains(t, []string{"SOAPBRIDGE_DATABASE", "SOAPBRIDGE_CLIENT_SECRET", "SOAPBRIDGE_SECURE_KEY", "SOAPBRIDGE_BASIC_PASSWORD"}, k)
		_, inline := env(c, k)
		assert.False(t, inline, "%s is set in both the ConfigMap and the Deployment", k)
	}

	// The Secret: every key the Deployment reads comes from a source under
	// secrets/, which git ignores.
	keys := map[string]string{} // key → source
	for _, f := range sg.Files {
		k, src, ok := strings.Cut(f, "=")
		require.True(t, ok, "secretGenerator files entry %q names its key", f)
		keys[k] = src
	}
	for _, e := range sg.Envs {
		keys["(env file)"] = e
	}
	assert.Empty(t, sg.Literals, "no secret value in the repository")
	for k, src := range keys {
		assert.True(t, strings.HasPrefix(src, "secrets/"), "%s comes from %s, outside secrets/", k, src)
	}
	ignore, err := os.ReadFile("secrets/.gitignore")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^\*$`, string(ignore), "secrets/ is git-ignored")
	dsn, ok := env(c, "SOAPBRIDGE_DATABASE")
	require.True(t, ok)
	require.NotNil(t, dsn.ValueFrom.SecretKeyRef)
	assert.Equal(t, sg.Name, dsn.ValueFrom.SecretKeyRef.Name)
	assert.Equal(t, "database", dsn.ValueFrom.SecretKeyRef.Key)
	assert.Equal(t, []string{"secrets/database.env"}, sg.Envs, "the database key comes from an env file (no trailing newline in the DSN)")
	var mounted bool
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			assert.Equal(t, sg.Name, v.Secret.SecretName)
			for _, it := range v.Secret.Items {
				assert.Contains(t, keys, it.Key, "the Secret has the key %s the volume mounts", it.Key)
				mounted = true
			}
		}
	}
	assert.True(t, mounted, "the merchants' file is mounted from the Secret")
}

// TestCallersSeenBehindTheIngress: with the per-address cap off (every
// connection comes from the ingress), the base ships trusted_proxies, as a
// placeholder the bridge refuses (not a CIDR) until the operator sets the
// ingress controller's addresses as the runbook says: never the silent
// lock-out of a base without it. The probes reach the admin listener by
// the pod IP (no host, no Host header), which its Host check accepts.
func TestCallersSeenBehindTheIngress(t *testing.T) {
	settings := envFile(t, "soapbridge.env")
	require.Equal(t, "0", settings["SOAPBRIDGE_MAX_CONNECTIONS_PER_IP"])
	proxies, ok := settings["SOAPBRIDGE_TRUSTED_PROXIES"]
	require.True(t, ok, "the per-address cap is off: trusted_proxies must be shipped")
	require.NotEmpty(t, proxies)
	_, prefixErr := netip.ParsePrefix(proxies)
	_, addrErr := netip.ParseAddr(proxies)
	assert.True(t, prefixErr != nil && addrErr != nil,
		"%q: a placeholder the bridge refuses, not an address that passes for the ingress's", proxies)
	runbook, err := os.ReadFile("../../docs/operations.md")
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(runbook), proxies) && strings.Contains(string(runbook), "SOAPBRIDGE_TRUSTED_PROXIES"),
		"docs/operations.md tells the operator to replace the placeholder %s", proxies)

	d := get[*appsv1.Deployment](t, loadBase(t), "soapbridge")
	c := d.Spec.Template.Spec.Containers[0]
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		require.NotNil(t, p, name)
		require.NotNil(t, p.HTTPGet, name)
		assert.Empty(t, p.HTTPGet.Host, "%s probe: the pod IP is the Host the admin listener accepts", name)
		for _, h := range p.HTTPGet.HTTPHeaders {
			assert.NotEqual(t, "host", strings.ToLower(h.Name), "%s probe: a Host header the admin listener may refuse (421)", name)
		}
	}
}
