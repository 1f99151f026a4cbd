package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/trovehq/trove/internal/skipnote"
)

// chartDir is the Helm chart, relative to this package.
var chartDir = filepath.Join("helm", "trove")

// The environment variables that choose helm: TROVE_HELM names the binary
// (else helm on PATH); TROVE_REQUIRE_HELM=1 (.ci/run sets it) makes a
// missing helm a failure instead of a skip.
const (
	helmEnv        = "TROVE_HELM"
	requireHelmEnv = "TROVE_REQUIRE_HELM"
)

// helmBin returns the helm to run: $TROVE_HELM, else helm on PATH. Without
// one it skips t through skipnote, or fails t when TROVE_REQUIRE_HELM=1.
func helmBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(helmEnv)
	if bin == "" {
		bin = "helm"
	}
	path, err := exec.LookPath(bin)
	if err == nil {
		return path
	}
	if os.Getenv(requireHelmEnv) == "1" {
		t.Fatalf("helm not found (%v) and %s=1: install it (see .ci/run) or set %s", err, requireHelmEnv, helmEnv)
	}
	skipnote.Skip(t, "the Helm chart is not checked without helm: GOBIN=$HOME/.cache/trove-ci/bin go install helm.sh/helm/v4/cmd/helm@v4.3.2, then TROVE_HELM=$HOME/.cache/trove-ci/bin/helm")
	return ""
}

// runHelm runs helm with args and its state directories under a temporary
// directory (nothing read from or written to the user's helm setup),
// returning its standard output, and its standard error in the error.
func runHelm(t *testing.T, helm string, args ...string) ([]byte, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helm, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "kubeconfig"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &helmError{err: err, stderr: stderr.String(), stdout: stdout.String()}
	}
	return stdout.Bytes(), nil
}

// helmError is a failed helm run with what it printed.
type helmError struct {
	err            error
	stderr, stdout string
}

func (e *helmError) Error() string {
	return e.err.Error() + "\nstderr:\n" + e.stderr + "\nstdout:\n" + e.stdout
}

// The parts of the rendered objects the tests look at (yaml.v3 needs the
// camelCase names spelt out).
type (
	object struct {
		Kind     string `yaml:"kind"`
		Metadata struct {
			Name        string            `yaml:"name"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"metadata"`
		node *yaml.Node // the whole document, for kind-specific decoding
	}
	workload struct { // StatefulSet or Deployment
		Spec struct {
			Replicas    *int   `yaml:"replicas"`
			ServiceName string `yaml:"serviceName"`
			Selector    struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Template struct {
				Metadata struct {
					Labels      map[string]string `yaml:"labels"`
					Annotations map[string]string `yaml:"annotations"`
				} `yaml:"metadata"`
				Spec podSpec `yaml:"spec"`
			} `yaml:"template"`
			VolumeClaimTemplates []claim `yaml:"volumeClaimTemplates"`
		} `yaml:"spec"`
	}
	claim struct {
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		Spec struct {
			AccessModes      []string `yaml:"accessModes"`
			StorageClassName string   `yaml:"storageClassName"`
			Resources        struct {
				Requests map[string]string `yaml:"requests"`
			} `yaml:"resources"`
		} `yaml:"spec"`
	}
	podSpec struct {
		AutomountServiceAccountToken *bool `yaml:"automountServiceAccountToken"`
		SecurityContext              struct {
			RunAsNonRoot   *bool  `yaml:"runAsNonRoot"`
			RunAsUser      *int64 `yaml:"runAsUser"`
			FSGroup        *int64 `yaml:"fsGroup"`
			SeccompProfile struct {
				Type string `yaml:"type"`
			} `yaml:"seccompProfile"`
		} `yaml:"securityContext"`
		Containers []container `yaml:"containers"`
		Volumes    []volume    `yaml:"volumes"`
	}
	container struct {
		Name  string   `yaml:"name"`
		Image string   `yaml:"image"`
		Args  []string `yaml:"args"`
		Env   []envVar `yaml:"env"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		StartupProbe    *probe            `yaml:"startupProbe"`
		LivenessProbe   *probe            `yaml:"livenessProbe"`
		ReadinessProbe  *probe            `yaml:"readinessProbe"`
		SecurityContext containerSecurity `yaml:"securityContext"`
		Resources       struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	}
	containerSecurity struct {
		RunAsNonRoot             *bool  `yaml:"runAsNonRoot"`
		RunAsUser                *int64 `yaml:"runAsUser"`
		ReadOnlyRootFilesystem   *bool  `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
			Add  []string `yaml:"add"`
		} `yaml:"capabilities"`
		SeccompProfile struct {
			Type string `yaml:"type"`
		} `yaml:"seccompProfile"`
	}
	envVar struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value,omitempty"`
		ValueFrom *struct {
			SecretKeyRef *secretKeyRef `yaml:"secretKeyRef,omitempty"`
		} `yaml:"valueFrom,omitempty"`
	}
	secretKeyRef struct {
		Name string `yaml:"name"`
		Key  string `yaml:"key"`
	}
	probe struct {
		HTTPGet *struct {
			Path   string `yaml:"path"`
			Port   string `yaml:"port"`
			Scheme string `yaml:"scheme"`
		} `yaml:"httpGet"`
		TCPSocket *struct {
			Port string `yaml:"port"`
		} `yaml:"tcpSocket"`
	}
	volume struct {
		Name     string         `yaml:"name"`
		EmptyDir map[string]any `yaml:"emptyDir"`
		Secret   *struct {
			SecretName string `yaml:"secretName"`
		} `yaml:"secret"`
		PersistentVolumeClaim map[string]any `yaml:"persistentVolumeClaim"`
	}
	service struct {
		Spec struct {
			Type      string            `yaml:"type"`
			ClusterIP string            `yaml:"clusterIP"`
			Selector  map[string]string `yaml:"selector"`
			Ports     []struct {
				Name       string `yaml:"name"`
				Port       int    `yaml:"port"`
				TargetPort string `yaml:"targetPort"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	pdb struct {
		Spec struct {
			MaxUnavailable int `yaml:"maxUnavailable"`
			Selector       struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
		} `yaml:"spec"`
	}
	secret struct {
		StringData map[string]string `yaml:"stringData"`
	}
)

// secretEnv is an environment variable read from a Secret.
func secretEnv(name, secret, key string) envVar {
	e := envVar{Name: name}
	e.ValueFrom = &struct {
		SecretKeyRef *secretKeyRef `yaml:"secretKeyRef,omitempty"`
	}{SecretKeyRef: &secretKeyRef{Name: secret, Key: key}}
	return e
}

// parseManifests splits helm template's multi-document output into
// objects, skipping empty documents.
func parseManifests(t *testing.T, out []byte) []object {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(out))
	var objs []object
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("helm template printed YAML that does not parse: %v\n%s", err, out)
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue // a document of comments only
		}
		var o object
		if err := doc.Decode(&o); err != nil {
			t.Fatalf("decoding an object: %v", err)
		}
		o.node = &doc
		objs = append(objs, o)
	}
	return objs
}

// find returns the object of kind named name, failing t when there is none.
func find(t *testing.T, objs []object, kind, name string, into any) {
	t.Helper()
	for _, o := range objs {
		if o.Kind == kind && o.Metadata.Name == name {
			if err := o.node.Decode(into); err != nil {
				t.Fatalf("decoding %s/%s: %v", kind, name, err)
			}
			return
		}
	}
	t.Fatalf("no %s/%s among the rendered objects", kind, name)
}

// appVersion reads the chart's appVersion, which the image tag and the
// version label default to.
func appVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		APIVersion string `yaml:"apiVersion"`
		AppVersion string `yaml:"appVersion"`
		Version    string `yaml:"version"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c.APIVersion != "v2" || c.AppVersion == "" || c.Version == "" {
		t.Fatalf("Chart.yaml: apiVersion %q (want v2), appVersion %q, version %q: all are required", c.APIVersion, c.AppVersion, c.Version)
	}
	return c.AppVersion
}

// TestHelmChart lints (--strict) and renders the chart in each mode and
// checks what it renders: the objects, the workload's replicas and volume
// claim, the container's environment (the PostgreSQL URL and the model key
// from Secrets), probes, hardening and labels.
func TestHelmChart(t *testing.T) {
	helm := helmBin(t)
	version := appVersion(t)
	const release = "trove" // fullname is then "trove" too
	base := []envVar{
		{Name: "TROVE_DATA", Value: "/data"},
		{Name: "TROVE_ADDR", Value: "0.0.0.0:7007"},
		{Name: "TROVE_CONSOLE", Value: "true"},
	}
	pgURL := "postgres://trove:pw@db.example.com:5432/trove?sslmode=require"
	modes := []struct {
		name     string
		values   []string // helm's -f and --set arguments
		workload string   // StatefulSet or Deployment
		objects  []string // kind/name of every object, sorted
		replicas int
		claim    *claim // the SQLite volume claim template; nil: none
		args     []string
		env      []envVar
		scheme   string            // of the probes
		mounts   []string          // the container's mount paths
		secret   map[string]string // the Secret the chart makes; nil: none
	}{
		{
			name:     "sqlite defaults",
			workload: "StatefulSet",
			objects:  []string{"Service/trove", "Service/trove-headless", "StatefulSet/trove"},
			replicas: 1,
			claim:    newClaim("", "10Gi"),
			args:     []string{"serve"},
			env:      append(slices.Clone(base), envVar{Name: "TROVE_CONSOLE_SECURE_COOKIE", Value: "false"}),
			scheme:   "HTTP",
			mounts:   []string{"/data", "/tmp"},
		},
		{
			name:     "sqlite with model key and ingress",
			values:   []string{"-f", filepath.Join(chartDir, "ci", "sqlite-values.yaml")},
			workload: "StatefulSet",
			objects:  []string{"Ingress/trove", "Service/trove", "Service/trove-headless", "StatefulSet/trove"},
			replicas: 1,
			claim:    newClaim("fast", "20Gi"),
			args:     []string{"serve"},
			env: append(slices.Clone(base),
				envVar{Name: "TROVE_CONSOLE_SECURE_COOKIE", Value: "true"}, // the Ingress terminates TLS
				secretEnv("ANTHROPIC_API_KEY", "trove-model", "anthropic-api-key")),
			scheme: "HTTP",
			mounts: []string{"/data", "/tmp"},
		},
		{
			name:     "postgres from existing secret",
			values:   []string{"-f", filepath.Join(chartDir, "ci", "postgres-values.yaml")},
			workload: "Deployment",
			objects:  []string{"Deployment/trove", "PodDisruptionBudget/trove", "Service/trove"},
			replicas: 3,
			args:     []string{"serve", "--auth-cache=10s"},
			env: append(slices.Clone(base),
				envVar{Name: "TROVE_CONSOLE_SECURE_COOKIE", Value: "false"},
				secretEnv("TROVE_DATABASE", "trove-postgres", "url"),
				envVar{Name: "TROVE_TLS_CERT", Value: "/tls/tls.crt"},
				envVar{Name: "TROVE_TLS_KEY", Value: "/tls/tls.key"},
				secretEnv("ANTHROPIC_API_KEY", "trove-model", "key"),
				envVar{Name: "ANTHROPIC_BASE_URL", Value: "https://gateway.example.com"}),
			scheme: "HTTPS",
			mounts: []string{"/data", "/tmp", "/tls"},
		},
		{
			name:     "postgres from url",
			values:   []string{"--set", "database.driver=postgres", "--set", "replicas=2", "--set", "database.postgres.url=" + pgURL},
			workload: "Deployment",
			objects:  []string{"Deployment/trove", "PodDisruptionBudget/trove", "Secret/trove-database", "Service/trove"},
			replicas: 2,
			args:     []string{"serve"},
			env: append(slices.Clone(base),
				envVar{Name: "TROVE_CONSOLE_SECURE_COOKIE", Value: "false"},
				secretEnv("TROVE_DATABASE", "trove-database", "database-url")),
			scheme: "HTTP",
			mounts: []string{"/data", "/tmp"},
			secret: map[string]string{"database-url": pgURL},
		},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			if out, err := runHelm(t, helm, append([]string{"lint", "--strict", chartDir}, m.values...)...); err != nil {
				t.Fatalf("helm lint --strict: %v\n%s", err, out)
			}
			out, err := runHelm(t, helm, append([]string{"template", release, chartDir, "--namespace", "trove"}, m.values...)...)
			if err != nil {
				t.Fatalf("helm template: %v", err)
			}
			objs := parseManifests(t, out)
			var w workload
			find(t, objs, m.workload, release, &w)
			pod := w.Spec.Template.Spec
			if len(pod.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(pod.Containers))
			}
			c := pod.Containers[0]

			t.Run("objects", func(t *testing.T) {
				var got []string
				for _, o := range objs {
					got = append(got, o.Kind+"/"+o.Metadata.Name)
				}
				slices.Sort(got)
				if diff := cmp.Diff(m.objects, got); diff != "" {
					t.Errorf("rendered objects (-want +got):\n%s", diff)
				}
			})
			t.Run("labels", func(t *testing.T) {
				want := map[string]string{
					"app.kubernetes.io/name":       "trove",
					"app.kubernetes.io/instance":   release,
					"app.kubernetes.io/version":    version,
					"app.kubernetes.io/component":  "server",
					"app.kubernetes.io/part-of":    "trove",
					"app.kubernetes.io/managed-by": "Helm",
				}
				for _, o := range objs {
					for k, v := range want {
						if got := o.Metadata.Labels[k]; got != v {
							t.Errorf("%s/%s: label %s = %q, want %q", o.Kind, o.Metadata.Name, k, got, v)
						}
					}
					if !strings.HasPrefix(o.Metadata.Labels["helm.sh/chart"], "trove-") {
						t.Errorf("%s/%s: label helm.sh/chart = %q, want trove-<version>", o.Kind, o.Metadata.Name, o.Metadata.Labels["helm.sh/chart"])
					}
				}
				sel := w.Spec.Selector.MatchLabels
				if diff := cmp.Diff(map[string]string{"app.kubernetes.io/name": "trove", "app.kubernetes.io/instance": release}, sel); diff != "" {
					t.Errorf("workload selector (-want +got):\n%s", diff)
				}
				for k, v := range sel {
					if w.Spec.Template.Metadata.Labels[k] != v {
						t.Errorf("the pod template lacks the selector's label %s=%s: the workload would select no pod", k, v)
					}
				}
			})
			t.Run("replicas", func(t *testing.T) {
				if w.Spec.Replicas == nil || *w.Spec.Replicas != m.replicas {
					t.Errorf("%s replicas = %v, want %d", m.workload, ptrString(w.Spec.Replicas), m.replicas)
				}
			})
			t.Run("volume claim", func(t *testing.T) {
				for _, o := range objs {
					if o.Kind == "PersistentVolumeClaim" {
						t.Errorf("a standalone PersistentVolumeClaim %s: the data volume belongs to the StatefulSet", o.Metadata.Name)
					}
				}
				var data *volume
				for i, v := range pod.Volumes {
					if v.Name == "data" {
						data = &pod.Volumes[i]
					}
				}
				if m.claim == nil {
					if len(w.Spec.VolumeClaimTemplates) != 0 {
						t.Errorf("volume claim templates %+v, want none on PostgreSQL", w.Spec.VolumeClaimTemplates)
					}
					if data == nil || data.EmptyDir == nil || data.PersistentVolumeClaim != nil {
						t.Errorf("the data volume is %+v, want an emptyDir (PostgreSQL holds the data)", data)
					}
					return
				}
				if data != nil {
					t.Errorf("a pod volume named data (%+v) would hide the volume claim template's", *data)
				}
				if diff := cmp.Diff([]claim{*m.claim}, w.Spec.VolumeClaimTemplates); diff != "" {
					t.Errorf("volume claim templates (-want +got):\n%s", diff)
				}
				if w.Spec.ServiceName != "trove-headless" {
					t.Errorf("serviceName %q, want trove-headless", w.Spec.ServiceName)
				}
			})
			t.Run("image and args", func(t *testing.T) {
				if want := "trove:" + version; c.Image != want {
					t.Errorf("image %q, want %q (the tag defaults to appVersion)", c.Image, want)
				}
				if diff := cmp.Diff(m.args, c.Args); diff != "" {
					t.Errorf("args (-want +got):\n%s", diff)
				}
			})
			t.Run("env", func(t *testing.T) {
				if diff := cmp.Diff(m.env, c.Env); diff != "" {
					t.Errorf("env (-want +got):\n%s", diff)
				}
			})
			t.Run("mounts", func(t *testing.T) {
				var got []string
				for _, vm := range c.VolumeMounts {
					got = append(got, vm.MountPath)
				}
				if diff := cmp.Diff(m.mounts, got); diff != "" {
					t.Errorf("mount paths (-want +got):\n%s", diff)
				}
			})
			t.Run("probes", func(t *testing.T) {
				// Startup and readiness wait for the database (/healthz);
				// liveness must not, or a database outage restarts every pod.
				for name, p := range map[string]*probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe} {
					if p == nil || p.HTTPGet == nil {
						t.Errorf("no %s probe over HTTP: %+v", name, p)
						continue
					}
					if g := p.HTTPGet; g.Path != "/healthz" || g.Port != "http" || g.Scheme != m.scheme {
						t.Errorf("%s probe GET %s %s://:%s, want /healthz %s://:http", name, g.Path, g.Scheme, g.Port, m.scheme)
					}
				}
				if p := c.LivenessProbe; p == nil || p.HTTPGet != nil || p.TCPSocket == nil || p.TCPSocket.Port != "http" {
					t.Errorf("liveness probe %+v, want a TCP connect to http (not /healthz, which fails while the database is down)", p)
				}
				if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 7007 {
					t.Errorf("container ports %+v, want http 7007", c.Ports)
				}
			})
			t.Run("securityContext", func(t *testing.T) {
				ps := pod.SecurityContext
				if !isTrue(ps.RunAsNonRoot) || ptrString(ps.RunAsUser) != "65532" || ptrString(ps.FSGroup) != "65532" || ps.SeccompProfile.Type != "RuntimeDefault" {
					t.Errorf("pod securityContext runAsNonRoot %s runAsUser %s fsGroup %s seccomp %q, want true 65532 65532 RuntimeDefault",
						ptrString(ps.RunAsNonRoot), ptrString(ps.RunAsUser), ptrString(ps.FSGroup), ps.SeccompProfile.Type)
				}
				cs := c.SecurityContext
				checks := []struct {
					field string
					ok    bool
					got   string
				}{
					{"runAsNonRoot true", isTrue(cs.RunAsNonRoot), ptrString(cs.RunAsNonRoot)},
					{"runAsUser 65532", ptrString(cs.RunAsUser) == "65532", ptrString(cs.RunAsUser)},
					{"readOnlyRootFilesystem true", isTrue(cs.ReadOnlyRootFilesystem), ptrString(cs.ReadOnlyRootFilesystem)},
					{"allowPrivilegeEscalation false", cs.AllowPrivilegeEscalation != nil && !*cs.AllowPrivilegeEscalation, ptrString(cs.AllowPrivilegeEscalation)},
					{"capabilities drop [ALL], add none", slices.Equal(cs.Capabilities.Drop, []string{"ALL"}) && len(cs.Capabilities.Add) == 0, strings.Join(cs.Capabilities.Drop, ",") + " / " + strings.Join(cs.Capabilities.Add, ",")},
					{"seccompProfile RuntimeDefault", cs.SeccompProfile.Type == "RuntimeDefault", cs.SeccompProfile.Type},
				}
				for _, ch := range checks {
					if !ch.ok {
						t.Errorf("container securityContext: want %s, got %s", ch.field, ch.got)
					}
				}
				if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
					t.Errorf("automountServiceAccountToken %s, want false (Trove never calls the Kubernetes API)", ptrString(pod.AutomountServiceAccountToken))
				}
			})
			t.Run("resources", func(t *testing.T) {
				if c.Resources.Requests["memory"] == "" || c.Resources.Requests["cpu"] == "" || c.Resources.Limits["memory"] == "" {
					t.Errorf("resources %+v, want cpu and memory requests and a memory limit", c.Resources)
				}
			})
			t.Run("service", func(t *testing.T) {
				var s service
				find(t, objs, "Service", release, &s)
				if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 7007 || s.Spec.Ports[0].TargetPort != "http" {
					t.Errorf("Service ports %+v, want 7007 -> http", s.Spec.Ports)
				}
				if diff := cmp.Diff(w.Spec.Selector.MatchLabels, s.Spec.Selector); diff != "" {
					t.Errorf("Service selector differs from the workload's (-workload +service):\n%s", diff)
				}
			})
			t.Run("disruption budget", func(t *testing.T) {
				if m.workload != "Deployment" {
					return // the objects subtest checks there is none
				}
				var p pdb
				find(t, objs, "PodDisruptionBudget", release, &p)
				if p.Spec.MaxUnavailable != 1 {
					t.Errorf("maxUnavailable %d, want 1", p.Spec.MaxUnavailable)
				}
				if diff := cmp.Diff(w.Spec.Selector.MatchLabels, p.Spec.Selector.MatchLabels); diff != "" {
					t.Errorf("PodDisruptionBudget selector differs from the workload's (-workload +pdb):\n%s", diff)
				}
			})
			t.Run("database secret", func(t *testing.T) {
				if m.secret == nil {
					return // the objects subtest checks there is none
				}
				var s secret
				find(t, objs, "Secret", "trove-database", &s)
				if diff := cmp.Diff(m.secret, s.StringData); diff != "" {
					t.Errorf("Secret stringData (-want +got):\n%s", diff)
				}
				if w.Spec.Template.Metadata.Annotations["checksum/database-secret"] == "" {
					t.Errorf("no checksum/database-secret annotation on the pods: a new URL would not roll them")
				}
			})
		})
	}
}

// newClaim is the volume claim template the StatefulSet should carry.
func newClaim(class, size string) *claim {
	var c claim
	c.Metadata.Name = "data"
	c.Spec.AccessModes = []string{"ReadWriteOnce"}
	c.Spec.StorageClassName = class
	c.Spec.Resources.Requests = map[string]string{"storage": size}
	return &c
}

// TestHelmChartRefuses checks that helm refuses bad values with a message
// saying what is wrong: the chart's own (fail) for combinations, which
// helm template and helm install stop on, and the schema's for types and
// unknown keys, which helm lint refuses too.
func TestHelmChartRefuses(t *testing.T) {
	helm := helmBin(t)
	cases := []struct {
		name   string
		set    []string
		schema bool     // refused by values.schema.json, so by helm lint too (lint only logs fail's message)
		want   []string // all in helm's error output
	}{
		{
			name: "sqlite with two replicas",
			set:  []string{"--set", "replicas=2"},
			want: []string{"replicas=2 needs database.driver=postgres"},
		},
		{
			name: "postgres with both url sources",
			set:  []string{"--set", "database.driver=postgres", "--set", "database.postgres.existingSecret=pg", "--set", "database.postgres.url=postgres://db/trove"},
			want: []string{"never both"},
		},
		{
			name: "postgres without a url",
			set:  []string{"--set", "database.driver=postgres"},
			want: []string{"database.driver=postgres needs the PostgreSQL URL"},
		},
		{
			name: "sqlite with a postgres url",
			set:  []string{"--set", "database.postgres.url=postgres://db/trove"},
			want: []string{"are for database.driver=postgres"},
		},
		{
			name:   "replicas a string",
			schema: true,
			set:    []string{"--set-string", "replicas=2"},
			want:   []string{"schema", "/replicas", "integer"},
		},
		{
			name:   "unknown driver",
			schema: true,
			set:    []string{"--set", "database.driver=mysql"},
			want:   []string{"schema", "/database/driver"},
		},
		{
			name:   "misspelt key",
			schema: true,
			set:    []string{"--set", "replica=2"},
			want:   []string{"schema", "'replica' not allowed"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmds := [][]string{{"template", "trove", chartDir}}
			if tc.schema {
				cmds = append(cmds, []string{"lint", "--strict", chartDir})
			}
			for _, cmd := range cmds {
				out, err := runHelm(t, helm, append(cmd, tc.set...)...)
				var he *helmError
				if !errors.As(err, &he) {
					t.Errorf("helm %s passed (err %v), want a refusal:\n%s", cmd[0], err, out)
					continue
				}
				// helm template says why on stderr, helm lint on stdout.
				said := he.stderr + he.stdout
				for _, w := range tc.want {
					if !strings.Contains(said, w) {
						t.Errorf("helm %s's error lacks %q:\n%s", cmd[0], w, said)
					}
				}
			}
		})
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

// ptrString prints *p, or "unset".
func ptrString[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return strings.TrimSpace(strings.ReplaceAll(yamlString(*p), "\n", " "))
}

func yamlString(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
