package kubernetes

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// object is one decoded YAML document: its file, its kind and the typed value.
type object struct {
	file string
	kind string
	name string
	obj  any
}

// docSeparator splits a YAML stream into documents.
var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// splitDocuments returns the non-empty documents of a YAML stream.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	for _, d := range docSeparator.Split(string(data), -1) {
		if strings.TrimSpace(stripComments(d)) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

// stripComments drops whole-line comments, to tell a comment-only document
// from one with content.
func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// decodeStrict decodes one document into the k8s.io/api type its apiVersion
// and kind name, rejecting unknown and duplicate fields.
func decodeStrict(doc []byte) (kind string, name string, obj any, err error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return "", "", nil, err
	}
	switch tm.APIVersion + " " + tm.Kind {
	case "batch/v1 Job":
		obj = &batchv1.Job{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1 Secret":
		obj = &corev1.Secret{}
	default:
		return "", "", nil, fmt.Errorf("unexpected apiVersion %q kind %q", tm.APIVersion, tm.Kind)
	}
	// UnmarshalStrict is YAMLToJSONStrict then a json.Decoder with
	// DisallowUnknownFields: a misspelt field is an error, not a no-op.
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return "", "", nil, err
	}
	switch o := obj.(type) {
	case *batchv1.Job:
		name = o.Name
	case *corev1.Service:
		name = o.Name
	case *corev1.ConfigMap:
		name = o.Name
	case *corev1.Secret:
		name = o.Name
	}
	if name == "" {
		return "", "", nil, fmt.Errorf("%s has no metadata.name", tm.Kind)
	}
	return tm.Kind, name, obj, nil
}

// loadAll decodes every document of every deploy/kubernetes/*.yaml.
func loadAll(t *testing.T) []object {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no *.yaml in deploy/kubernetes")
	}
	var objs []object
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs := splitDocuments(data)
		if len(docs) == 0 {
			t.Errorf("%s: no documents", f)
		}
		for i, d := range docs {
			kind, name, obj, err := decodeStrict(d)
			if err != nil {
				t.Errorf("%s document %d: %v", f, i+1, err)
				continue
			}
			objs = append(objs, object{file: f, kind: kind, name: name, obj: obj})
		}
	}
	return objs
}

// manifests are the objects the invariant checks refer to.
type manifests struct {
	service     *corev1.Service
	agents      *batchv1.Job
	coordinator *batchv1.Job
	config      *corev1.ConfigMap
	all         []object
}

// load decodes everything and picks out the objects by name.
func load(t *testing.T) manifests {
	t.Helper()
	m := manifests{all: loadAll(t)}
	for _, o := range m.all {
		switch v := o.obj.(type) {
		case *corev1.Service:
			if v.Name == "glmbench-agents" {
				m.service = v
			}
		case *batchv1.Job:
			switch v.Name {
			case "glmbench-agent":
				m.agents = v
			case "glmbench-coordinator":
				m.coordinator = v
			}
		case *corev1.ConfigMap:
			if v.Name == "glmbench-config" {
				m.config = v
			}
		}
	}
	if m.service == nil || m.agents == nil || m.coordinator == nil || m.config == nil {
		t.Fatalf("want Service glmbench-agents, Jobs glmbench-agent and glmbench-coordinator, ConfigMap glmbench-config; got %v", names(m.all))
	}
	return m
}

func names(objs []object) []string {
	var s []string
	for _, o := range objs {
		s = append(s, o.kind+"/"+o.name)
	}
	return s
}

// flagValue returns the argument after flag in args, and whether flag is there.
func flagValue(args []string, flag string) (string, bool) {
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		return "", false
	}
	return args[i+1], true
}

// containerArgs is a container's command then args, as the runtime runs them.
func containerArgs(c corev1.Container) []string {
	return append(slices.Clone(c.Command), c.Args...)
}

// namedPort resolves a probe's or Service's target port against a container.
func namedPort(c corev1.Container, p intstr.IntOrString) (int32, bool) {
	if p.Type == intstr.Int {
		return p.IntVal, true
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

func TestEveryDocumentDecodesStrictlyIntoItsAPIType(t *testing.T) {
	objs := loadAll(t)
	// agents.yaml: Service + Job; coordinator.yaml: ConfigMap + Job.
	if len(objs) != 4 {
		t.Errorf("decoded %d objects, want 4: %v", len(objs), names(objs))
	}
}

func TestStrictDecodingRejectsAMisspeltField(t *testing.T) {
	cases := []struct {
		name string
		doc  string
	}{
		{"a misspelt spec field", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec:\n  paralelism: 4\n"},
		{"a misspelt field deep in the pod", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers:\n        - name: a\n          image: b\n          readinesProbe: {}\n"},
		{"a duplicate key", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  clusterIP: None\n  clusterIP: 10.0.0.1\n"},
		{"an unknown kind", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, _, _, err := decodeStrict([]byte(c.doc)); err == nil {
				t.Errorf("decoded without error:\n%s", c.doc)
			}
		})
	}
	// The same decoder accepts the well-spelt document, so the failures
	// above are the misspellings'.
	if _, _, _, err := decodeStrict([]byte("apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec:\n  parallelism: 4\n")); err != nil {
		t.Errorf("well-spelt Job: %v", err)
	}
}

func TestAgentsJobIsIndexedWithParallelismEqualToCompletions(t *testing.T) {
	j := load(t).agents.Spec
	if j.CompletionMode == nil || *j.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode = %v, want Indexed", j.CompletionMode)
	}
	if j.Completions == nil || j.Parallelism == nil || *j.Completions != *j.Parallelism || *j.Completions < 1 {
		t.Fatalf("completions %v, parallelism %v: want equal and positive (all agents up at once)", j.Completions, j.Parallelism)
	}
	if j.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy = %q, want Never (a restarted agent cannot rejoin a started run)", j.Template.Spec.RestartPolicy)
	}
	if j.BackoffLimitPerIndex == nil || *j.BackoffLimitPerIndex != 0 {
		t.Errorf("backoffLimitPerIndex = %v, want 0", j.BackoffLimitPerIndex)
	}
	if j.MaxFailedIndexes == nil || *j.MaxFailedIndexes != *j.Completions {
		t.Errorf("maxFailedIndexes = %v, want completions (%d): one dead agent must not stop the others", j.MaxFailedIndexes, *j.Completions)
	}
	if j.TTLSecondsAfterFinished == nil || *j.TTLSecondsAfterFinished <= 0 {
		t.Errorf("ttlSecondsAfterFinished = %v, want set", j.TTLSecondsAfterFinished)
	}
}

func TestServiceIsHeadlessAndSelectsTheAgentPods(t *testing.T) {
	m := load(t)
	s := m.service.Spec
	if s.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("clusterIP = %q, want None", s.ClusterIP)
	}
	if len(s.Selector) == 0 {
		t.Fatal("Service has no selector")
	}
	labels := m.agents.Spec.Template.Labels
	for k, v := range s.Selector {
		if labels[k] != v {
			t.Errorf("selector %s=%s is not on the agent pods (labels %v)", k, v, labels)
		}
	}
	// The coordinator's pods must not be selected: they do not listen.
	if sel, lab := s.Selector, m.coordinator.Spec.Template.Labels; matches(sel, lab) {
		t.Errorf("selector %v also selects the coordinator's pods %v", sel, lab)
	}
	if got := m.agents.Spec.Template.Spec.Subdomain; got != m.service.Name {
		t.Errorf("pods' subdomain = %q, want the Service's name %q (stable names <job>-<index>.<service>)", got, m.service.Name)
	}
}

func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestAgentListensOnThePortTheServiceExposesAndTheProbeHits(t *testing.T) {
	m := load(t)
	cs := m.agents.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("agent pod has %d containers, want 1", len(cs))
	}
	c := cs[0]
	args := containerArgs(c)
	if len(args) < 2 || filepath.Base(args[0]) != "glmbench" || args[1] != "agent" {
		t.Fatalf("agent runs %q, want glmbench agent ...", args)
	}
	listen, ok := flagValue(args, "--listen")
	if !ok {
		t.Fatalf("agent runs %q without --listen", args)
	}
	_, portText, found := strings.Cut(listen, ":")
	port, err := strconv.Atoi(portText)
	if !found || err != nil {
		t.Fatalf("--listen %q has no port", listen)
	}
	if len(m.service.Spec.Ports) != 1 {
		t.Fatalf("Service has %d ports, want 1", len(m.service.Spec.Ports))
	}
	sp := m.service.Spec.Ports[0]
	target, ok := namedPort(c, sp.TargetPort)
	if !ok || int(target) != port {
		t.Errorf("Service targetPort %v resolves to %d, agent listens on %d", sp.TargetPort.String(), target, port)
	}
	// --agents-dns names the Service, so the coordinator dials its port.
	if int(sp.Port) != port {
		t.Errorf("Service port %d, agent listens on %d", sp.Port, port)
	}
	p := c.ReadinessProbe
	if p == nil || p.HTTPGet == nil {
		t.Fatal("agent has no HTTP readiness probe")
	}
	if p.HTTPGet.Path != "/v1/agent/ping" {
		t.Errorf("readiness probe path %q, want /v1/agent/ping", p.HTTPGet.Path)
	}
	if pp, ok := namedPort(c, p.HTTPGet.Port); !ok || int(pp) != port {
		t.Errorf("readiness probe port %v resolves to %d, agent listens on %d", p.HTTPGet.Port.String(), pp, port)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("agent resources %v: want CPU requests and memory limits", c.Resources)
	}
}

func TestAPIKeyComesFromASecretRefAndNoSecretIsWritten(t *testing.T) {
	m := load(t)
	for _, o := range m.all {
		if o.kind == "Secret" {
			t.Errorf("%s: Secret %s is in the manifests; create it with kubectl instead", o.file, o.name)
		}
	}
	for _, j := range []*batchv1.Job{m.agents, m.coordinator} {
		c := j.Spec.Template.Spec.Containers[0]
		env, ok := flagValue(containerArgs(c), "--api-key-env")
		if !ok {
			t.Errorf("%s: no --api-key-env", j.Name)
			continue
		}
		var found bool
		for _, e := range c.Env {
			if e.Name != env {
				continue
			}
			found = true
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("%s: $%s is not from a secretKeyRef", j.Name, env)
			}
		}
		if !found {
			t.Errorf("%s: --api-key-env %s names no env var of the container", j.Name, env)
		}
	}
	if a, c := secretRefs(m.agents), secretRefs(m.coordinator); len(a) == 0 || !slices.Equal(a, c) {
		t.Errorf("agents read Secrets %q, the coordinator %q: want the same one", a, c)
	}
	// No literal key: nothing that looks like an OpenAI-style or bearer key.
	literal := regexp.MustCompile(`sk-[A-Za-z0-9_-]{8,}|Bearer\s+\S+`)
	files, _ := filepath.Glob("*.yaml")
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if loc := literal.Find(data); loc != nil {
			t.Errorf("%s holds %q, which looks like a literal key", f, loc)
		}
	}
}

// secretRefs lists the "secret/key" pairs a Job's first container reads.
func secretRefs(j *batchv1.Job) []string {
	var refs []string
	for _, e := range j.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			refs = append(refs, e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key)
		}
	}
	return refs
}

func TestCoordinatorCountsAndNamesTheAgents(t *testing.T) {
	m := load(t)
	cs := m.coordinator.Spec.Template.Spec.Containers
	c := cs[0]
	args := containerArgs(c)
	if len(args) < 2 || filepath.Base(args[0]) != "glmbench" || args[1] != "run" {
		t.Fatalf("coordinator's first container runs %q, want glmbench run ...", args)
	}
	count, _ := flagValue(args, "--agents-count")
	if n, err := strconv.Atoi(count); err != nil || int32(n) != *m.agents.Spec.Completions {
		t.Errorf("--agents-count %q, agents Job has %d completions", count, *m.agents.Spec.Completions)
	}
	if dns, _ := flagValue(args, "--agents-dns"); dns != m.service.Name {
		t.Errorf("--agents-dns %q, want the Service %q", dns, m.service.Name)
	}
	// $(ENDPOINT) is expanded by the kubelet from the container's env, which
	// takes it from the ConfigMap.
	if ep, _ := flagValue(args, "--endpoint"); ep != "$(ENDPOINT)" {
		t.Errorf("--endpoint %q, want $(ENDPOINT)", ep)
	}
	var fromConfig bool
	for _, e := range c.Env {
		if e.Name == "ENDPOINT" && e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil &&
			e.ValueFrom.ConfigMapKeyRef.Name == m.config.Name && m.config.Data[e.ValueFrom.ConfigMapKeyRef.Key] != "" {
			fromConfig = true
		}
	}
	if !fromConfig {
		t.Errorf("ENDPOINT is not taken from a key of ConfigMap %s", m.config.Name)
	}
	// --out is on a volume the results container also mounts, for kubectl cp.
	out, _ := flagValue(args, "--out")
	vol := mountedAt(c, out)
	if vol == "" {
		t.Fatalf("--out %q is not a mounted volume", out)
	}
	if len(cs) != 2 || mountedAt(cs[1], out) != vol || !slices.Contains(cs[1].Command, "sh") {
		t.Errorf("want a second container with a shell mounting %s at %s, for kubectl cp", vol, out)
	}
	if m.coordinator.Spec.Template.Spec.ShareProcessNamespace == nil || !*m.coordinator.Spec.Template.Spec.ShareProcessNamespace {
		t.Error("shareProcessNamespace is off: the results container cannot wait for glmbench")
	}
	if m.coordinator.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("coordinator restartPolicy %q, want Never", m.coordinator.Spec.Template.Spec.RestartPolicy)
	}
}

func mountedAt(c corev1.Container, path string) string {
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == path {
			return vm.Name
		}
	}
	return ""
}

func TestImagesEntrypointIsTheManifestsCommand(t *testing.T) {
	m := load(t)
	df := readDockerfile(t)
	entry := regexp.MustCompile(`(?m)^ENTRYPOINT\s+\["([^"]+)"`).FindStringSubmatch(df)
	if entry == nil {
		t.Fatal("Dockerfile has no exec-form ENTRYPOINT")
	}
	for _, j := range []*batchv1.Job{m.agents, m.coordinator} {
		if got := j.Spec.Template.Spec.Containers[0].Command[0]; got != entry[1] {
			t.Errorf("%s runs %q, the image's binary is %q", j.Name, got, entry[1])
		}
	}
	if !regexp.MustCompile(`(?m)^EXPOSE\s+` + strconv.Itoa(int(m.service.Spec.Ports[0].Port)) + `\b`).MatchString(df) {
		t.Errorf("Dockerfile does not EXPOSE the agents' port %d", m.service.Spec.Ports[0].Port)
	}
}

func readDockerfile(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestDockerfileBuildsStaticAndEndsOnDistroless(t *testing.T) {
	df := readDockerfile(t)
	var froms []string
	for _, line := range strings.Split(df, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && strings.EqualFold(f[0], "FROM") {
			froms = append(froms, f[1])
		}
	}
	if len(froms) < 2 {
		t.Fatalf("FROM lines %q: want a multi-stage build", froms)
	}
	if !strings.HasPrefix(froms[0], "golang:") {
		t.Errorf("builder stage FROM %q, want golang:", froms[0])
	}
	last := froms[len(froms)-1]
	if last != "scratch" && !strings.HasPrefix(last, "gcr.io/distroless/static") {
		t.Errorf("final stage FROM %q, want distroless/static or scratch", last)
	}
	if !regexp.MustCompile(`(?m)^(ENV\s+CGO_ENABLED=0|RUN\s+CGO_ENABLED=0\s)`).MatchString(df) {
		t.Error("Dockerfile does not set CGO_ENABLED=0")
	}
	build := regexp.MustCompile(`(?m)^RUN .*go build .*$`).FindString(df)
	for _, want := range []string{"-trimpath", `-ldflags "-s -w"`, "./cmd/glmbench"} {
		if !strings.Contains(build, want) {
			t.Errorf("go build line %q lacks %s", build, want)
		}
	}
	ignore, err := os.ReadFile(filepath.Join("..", "..", ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".git", "glmbench-results"} {
		if !slices.Contains(strings.Fields(string(ignore)), want) {
			t.Errorf(".dockerignore does not exclude %s", want)
		}
	}
}

func TestGlmbenchBinaryDoesNotLinkKubernetes(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	cmd := exec.Command(gobin, "list", "-deps", "github.com/glmbench/glmbench/cmd/glmbench")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	deps := strings.Fields(string(out))
	// The list is the real one: the CLI's own framework is in it.
	if !slices.Contains(deps, "github.com/spf13/cobra") {
		t.Fatalf("go list -deps lacks github.com/spf13/cobra: %q", deps)
	}
	for _, pkg := range deps {
		if strings.HasPrefix(pkg, "k8s.io/") {
			t.Errorf("cmd/glmbench links %s; only deploy/kubernetes's test may", pkg)
		}
	}
}

// The truth: the agents ask for a token and the coordinator gives one,
// each from a variable of its own container that is read from the same key
// of the same Secret, so the two are the same token and no manifest holds
// it.
func TestAgentsAndCoordinatorShareATokenFromTheSecret(t *testing.T) {
	m := load(t)
	ref := func(j *batchv1.Job, flag string) string {
		c := j.Spec.Template.Spec.Containers[0]
		name, ok := flagValue(containerArgs(c), flag)
		if !ok {
			t.Fatalf("%s: no %s", j.Name, flag)
		}
		for _, e := range c.Env {
			if e.Name == name && e.Value == "" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				return e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
			}
		}
		t.Fatalf("%s: %s %s names no variable read from a secretKeyRef", j.Name, flag, name)
		return ""
	}
	if a, c := ref(m.agents, "--token-env"), ref(m.coordinator, "--agents-token-env"); a != c {
		t.Errorf("the agents' token is %s, the coordinator's %s: want the same key", a, c)
	}
}
