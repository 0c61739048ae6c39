// Package deploy_test checks the container build file and the Kubernetes
// manifests of deploy/ without a cluster or a container engine.
//
// The manifests are decoded strictly (unknown or mistyped fields fail) into
// the Kubernetes API's own Go types (k8s.io/api), and checked for what the
// API server would refuse and for what makes the run wrong: required
// fields, names, references between the manifests (ConfigMap keys, the
// volume claim, volume mounts, $(VAR) references), the Indexed Job's shard
// arithmetic. Then every copy's command line, with the Job's variables
// expanded as the kubelet does, is given to the real binary (a dry run:
// nothing is sent). What this cannot check: the API server's admission and
// defaulting, policies of a given cluster (Pod Security, quotas), that a
// ReadWriteMany storage class exists, that the image can be pulled.
package deploy_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// manifests are the objects of a directory of manifests.
type manifests struct {
	jobs       map[string]*batchv1.Job
	configMaps map[string]*corev1.ConfigMap
	claims     map[string]*corev1.PersistentVolumeClaim
}

// load decodes every YAML document of the .yaml/.yml/.json files of dir, as
// kubectl apply -f dir reads them (not recursively).
func load(t *testing.T, dirs ...string) *manifests {
	t.Helper()
	m := &manifests{jobs: map[string]*batchv1.Job{}, configMaps: map[string]*corev1.ConfigMap{}, claims: map[string]*corev1.PersistentVolumeClaim{}}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			ext := filepath.Ext(e.Name())
			if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
				continue
			}
			path := filepath.Join(dir, e.Name())
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
				if strings.TrimSpace(stripComments(doc)) == "" {
					continue
				}
				m.add(t, fmt.Sprintf("%s#%d", path, i), []byte(doc))
			}
		}
	}
	return m
}

func stripComments(doc string) string {
	var out []string
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// add decodes one document strictly into the type of its kind.
func (m *manifests) add(t *testing.T, where string, doc []byte) {
	t.Helper()
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	var obj metav1.Object
	var err error
	switch tm.APIVersion + " " + tm.Kind {
	case "batch/v1 Job":
		var j batchv1.Job
		err = yaml.UnmarshalStrict(doc, &j)
		obj = &j
		m.jobs[j.Name] = &j
	case "v1 ConfigMap":
		var c corev1.ConfigMap
		err = yaml.UnmarshalStrict(doc, &c)
		obj = &c
		m.configMaps[c.Name] = &c
	case "v1 PersistentVolumeClaim":
		var c corev1.PersistentVolumeClaim
		err = yaml.UnmarshalStrict(doc, &c)
		obj = &c
		m.claims[c.Name] = &c
	default:
		t.Fatalf("%s: %s %s: not a kind these manifests use (the test knows Job, ConfigMap, PersistentVolumeClaim)", where, tm.APIVersion, tm.Kind)
	}
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if errs := validation.IsDNS1123Subdomain(obj.GetName()); len(errs) > 0 {
		t.Errorf("%s: name %q: %s", where, obj.GetName(), strings.Join(errs, "; "))
	}
	for k, v := range obj.GetLabels() {
		if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
			t.Errorf("%s: label %s=%s: %s", where, k, v, strings.Join(errs, "; "))
		}
	}
}

// checkJob checks what the API server requires of a Job and what the
// manifests must agree on.
func (m *manifests) checkJob(t *testing.T, j *batchv1.Job) {
	t.Helper()
	// A Job's name goes into its pods' labels: at most 63 characters.
	if errs := validation.IsDNS1123Label(j.Name); len(errs) > 0 {
		t.Errorf("job %s: %s", j.Name, strings.Join(errs, "; "))
	}
	ps := &j.Spec.Template.Spec
	if rp := ps.RestartPolicy; rp != corev1.RestartPolicyNever && rp != corev1.RestartPolicyOnFailure {
		t.Errorf("job %s: restartPolicy %q: a Job's pods need Never or OnFailure", j.Name, rp)
	}
	if len(ps.Containers) == 0 {
		t.Fatalf("job %s: no container", j.Name)
	}
	volumes := map[string]*corev1.Volume{}
	for i := range ps.Volumes {
		v := &ps.Volumes[i]
		volumes[v.Name] = v
		switch {
		case v.ConfigMap != nil:
			if m.configMaps[v.ConfigMap.Name] == nil {
				t.Errorf("job %s: volume %s: no ConfigMap %s among the manifests", j.Name, v.Name, v.ConfigMap.Name)
			}
		case v.PersistentVolumeClaim != nil:
			if m.claims[v.PersistentVolumeClaim.ClaimName] == nil {
				t.Errorf("job %s: volume %s: no PersistentVolumeClaim %s among the manifests", j.Name, v.Name, v.PersistentVolumeClaim.ClaimName)
			}
		case v.EmptyDir != nil:
		default:
			t.Errorf("job %s: volume %s: a source the test does not know", j.Name, v.Name)
		}
	}
	for _, c := range ps.Containers {
		if c.Name == "" || c.Image == "" {
			t.Errorf("job %s: a container needs a name and an image", j.Name)
		}
		if errs := validation.IsDNS1123Label(c.Name); len(errs) > 0 {
			t.Errorf("job %s: container %q: %s", j.Name, c.Name, strings.Join(errs, "; "))
		}
		for _, vm := range c.VolumeMounts {
			if volumes[vm.Name] == nil {
				t.Errorf("job %s: mount %s: no such volume", j.Name, vm.Name)
			}
			if !strings.HasPrefix(vm.MountPath, "/") {
				t.Errorf("job %s: mount path %q is not absolute", j.Name, vm.MountPath)
			}
		}
		env := map[string]bool{}
		for _, e := range c.Env {
			env[e.Name] = true
			if f := e.ValueFrom; f != nil && f.ConfigMapKeyRef != nil {
				ok := false
				if cm := m.configMaps[f.ConfigMapKeyRef.Name]; cm != nil {
					_, ok = cm.Data[f.ConfigMapKeyRef.Key]
				}
				if !ok && !ptrTrue(f.ConfigMapKeyRef.Optional) {
					t.Errorf("job %s: env %s: no key %s in ConfigMap %s", j.Name, e.Name, f.ConfigMapKeyRef.Key, f.ConfigMapKeyRef.Name)
				}
			}
			if f := e.ValueFrom; f != nil && f.SecretKeyRef != nil && !ptrTrue(f.SecretKeyRef.Optional) {
				t.Errorf("job %s: env %s: a required Secret the manifests do not create", j.Name, e.Name)
			}
		}
		for _, a := range c.Args {
			for _, ref := range varRef.FindAllStringSubmatch(a, -1) {
				if !env[ref[1]] {
					t.Errorf("job %s: argument %q: $(%s) is not a variable of the container (it would be left as written)", j.Name, a, ref[1])
				}
			}
		}
		for _, q := range []struct {
			name string
			v    interface{ String() string }
		}{{"cpu request", c.Resources.Requests.Cpu()}, {"memory request", c.Resources.Requests.Memory()}, {"memory limit", c.Resources.Limits.Memory()}} {
			if q.v.String() == "0" {
				t.Errorf("job %s: container %s has no %s", j.Name, c.Name, q.name)
			}
		}
	}
	if sc := ps.SecurityContext; sc == nil || !ptrTrue(sc.RunAsNonRoot) || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("job %s: pods must run as a non-root user", j.Name)
	}
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)`)

func ptrTrue(b *bool) bool { return b != nil && *b }

const (
	dir      = "kubernetes"
	mergeDir = "kubernetes/merge"
)

// TestManifests decodes the manifests strictly and checks them, and the
// Indexed Job's shard arithmetic: N copies, copy I gets --shard I/N of one
// seed and one start.
func TestManifests(t *testing.T) {
	m := load(t, dir)
	all := load(t, dir, mergeDir)
	if len(m.jobs) != 1 || m.jobs["fineserve-gen"] == nil {
		t.Fatalf("%s holds jobs %v, want fineserve-gen only (the merge Job lives in %s)", dir, keys(m.jobs), mergeDir)
	}
	for _, j := range all.jobs {
		all.checkJob(t, j)
	}
	j := m.jobs["fineserve-gen"]
	if j.Spec.CompletionMode == nil || *j.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Error("the copies' Job must be Indexed: the completion index is the shard")
	}
	if j.Spec.Completions == nil || j.Spec.Parallelism == nil || *j.Spec.Completions != *j.Spec.Parallelism || *j.Spec.Completions < 1 {
		t.Fatal("completions and parallelism must be equal: every copy runs at once")
	}
	if j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != 0 {
		t.Error("backoffLimit must be 0: a retried copy would start after --start-at")
	}
	n := *j.Spec.Completions
	c := j.Spec.Template.Spec.Containers[0]
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e := env["JOB_COMPLETION_INDEX"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
		e.ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Error("JOB_COMPLETION_INDEX must come from the pod's completion-index annotation")
	}
	if got := env["SHARDS"].Value; got != strconv.Itoa(int(n)) {
		t.Errorf("SHARDS is %q, completions %d: they must be equal", got, n)
	}
	if got := env["START_AT"].Value; got != "__START_AT__" {
		t.Errorf("START_AT is %q: the placeholder replaced when the Job is created (docs/SCALE_OUT.md)", got)
	}
	for _, want := range []string{"run", "--shard=$(JOB_COMPLETION_INDEX)/$(SHARDS)", "--start-at=$(START_AT)", "--seed=$(SEED)",
		"--summary-json=/results/shard-$(JOB_COMPLETION_INDEX).json", "--output-file=-"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("the copies' arguments lack %q", want)
		}
	}
	mj := all.jobs["fineserve-gen-merge"]
	if mj == nil {
		t.Fatal("no merge Job")
	}
	if got := mj.Spec.Template.Spec.Containers[0].Args; !slices.Equal(got, []string{"merge", "/results/shard-*.json", "-o", "/results/merged.json"}) {
		t.Errorf("merge arguments %q", got)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// buildCommand reads the go build command of the Dockerfile's build stage:
// its environment and arguments, with ARG defaults substituted.
func buildCommand(t *testing.T) (env, args []string) {
	t.Helper()
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	argDefaults := map[string]string{}
	var run string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if a, ok := strings.CutPrefix(l, "ARG "); ok {
			k, v, _ := strings.Cut(a, "=")
			argDefaults[k] = v
		}
		if r, ok := strings.CutPrefix(l, "RUN "); ok && strings.Contains(r, " go build ") {
			run = r
		}
	}
	if run == "" {
		t.Fatal("the Dockerfile has no RUN … go build")
	}
	run = regexp.MustCompile(`\$\{(\w+)\}`).ReplaceAllStringFunc(run, func(s string) string { return argDefaults[s[2:len(s)-1]] })
	words := shellWords(t, run)
	i := slices.Index(words, "go")
	if i < 0 || words[i+1] != "build" {
		t.Fatalf("cannot read %q", run)
	}
	return words[:i], words[i+2:]
}

// shellWords splits a command line as sh does for plain words and double
// quotes (all the build line uses).
func shellWords(t *testing.T, s string) []string {
	var words []string
	var cur strings.Builder
	in, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				words = append(words, cur.String())
				cur.Reset()
			}
			in = false
		case strings.ContainsRune(`'\$&|;`, r):
			t.Fatalf("the build line %q needs a real shell", s)
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// built is the command built with the Dockerfile's build command, run as a
// plain go build (the tests need no container engine), once for the tests.
var built struct {
	once sync.Once
	dir  string
	path string
	out  []byte
	err  error
}

func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	env, args := buildCommand(t)
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "fineserve-gen-image")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		out := slices.Index(args, "-o")
		if out < 0 || args[out+1] != "/out/fineserve-gen" {
			built.err = fmt.Errorf("the build writes %v, want -o /out/fineserve-gen", args)
			return
		}
		args = slices.Clone(args)
		args[out+1] = filepath.Join(dir, "fineserve-gen")
		cmd := exec.Command("go", append([]string{"build"}, args...)...)
		cmd.Dir = ".." // the build context: the repository root
		cmd.Env = append(os.Environ(), env...)
		built.out, built.err = cmd.CombinedOutput()
		built.path = args[out+1]
	})
	if built.err != nil {
		t.Fatalf("go build %v: %v\n%s", args, built.err, built.out)
	}
	return built.path
}

// TestDockerfile checks the image's build file: two stages, a static build
// (the build stage's command, run here as a plain go build with the same
// environment and flags, gives a binary without an ELF interpreter or
// shared libraries), a distroless or scratch final stage, a non-root user.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var froms []string
	var user, entry string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "FROM":
			froms = append(froms, f[1])
		case "USER":
			user = f[1]
		case "ENTRYPOINT":
			entry = strings.Join(f[1:], " ")
		}
	}
	if len(froms) < 2 {
		t.Errorf("stages %v: want a build stage and a final stage", froms)
	}
	if final := froms[len(froms)-1]; !strings.Contains(final, "distroless/static") && final != "scratch" {
		t.Errorf("final stage %s: want distroless/static or scratch", final)
	}
	if u, _, _ := strings.Cut(user, ":"); u == "" || u == "0" || u == "root" {
		t.Errorf("USER %q: want a non-root user", user)
	}
	if !strings.Contains(entry, "fineserve-gen") {
		t.Errorf("ENTRYPOINT %q", entry)
	}
	env, _ := buildCommand(t)
	if !slices.Contains(env, "CGO_ENABLED=0") {
		t.Errorf("build environment %v: want CGO_ENABLED=0", env)
	}

	bin := buildBinary(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary asks for a dynamic loader: not static")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs %v: not static", libs)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "fineserve-gen dev" {
		t.Errorf("--version: %q, %v", out, err)
	}
}

// TestJobCommandLines gives every copy's command line, as the kubelet
// expands it, to the binary as a dry run: each copy accepts it and computes
// the same schedule (one hash), and the copies' schedules together are the
// whole schedule.
func TestJobCommandLines(t *testing.T) {
	bin := buildBinary(t)
	m := load(t, dir)
	j := m.jobs["fineserve-gen"]
	c := j.Spec.Template.Spec.Containers[0]
	root := t.TempDir()
	// The mounts, on disk.
	mounts := map[string]string{}
	for _, vm := range c.VolumeMounts {
		local := filepath.Join(root, vm.Name)
		if err := os.MkdirAll(local, 0o755); err != nil {
			t.Fatal(err)
		}
		mounts[vm.MountPath] = local
		for _, v := range j.Spec.Template.Spec.Volumes {
			if v.Name == vm.Name && v.ConfigMap != nil {
				for k, data := range m.configMaps[v.ConfigMap.Name].Data {
					if err := os.WriteFile(filepath.Join(local, k), []byte(data), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	startAt := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	n := int(*j.Spec.Completions)
	var hashes []string
	var union []string
	run := func(index int, shard bool) (string, []string) {
		vars := map[string]string{}
		for _, e := range c.Env {
			switch {
			case e.Name == "JOB_COMPLETION_INDEX":
				vars[e.Name] = strconv.Itoa(index)
			case e.Name == "START_AT":
				vars[e.Name] = strings.ReplaceAll(e.Value, "__START_AT__", startAt)
			case e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil:
				vars[e.Name] = m.configMaps[e.ValueFrom.ConfigMapKeyRef.Name].Data[e.ValueFrom.ConfigMapKeyRef.Key]
			case e.ValueFrom == nil:
				vars[e.Name] = e.Value
			}
		}
		var args []string
		for _, a := range c.Args {
			a = varRef.ReplaceAllStringFunc(a, func(r string) string { return vars[r[2:len(r)-1]] })
			for mp, local := range mounts {
				a = strings.ReplaceAll(a, "="+mp+"/", "="+local+"/")
			}
			if !shard && strings.HasPrefix(a, "--shard=") {
				continue
			}
			args = append(args, a)
		}
		sched := filepath.Join(root, fmt.Sprintf("schedule-%d-%v.csv", index, shard))
		cmd := exec.Command(bin, append(args, "--dry-run", "--schedule-out", sched)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("copy %d: %v: %v\n%s", index, args, err, stderr.String())
		}
		hash := regexp.MustCompile(`schedule (sha256:[0-9a-f]{64})`).FindStringSubmatch(stderr.String())
		if shard && hash == nil {
			t.Fatalf("copy %d did not report its schedule hash:\n%s", index, stderr.String())
		}
		b, err := os.ReadFile(sched)
		if err != nil {
			t.Fatal(err)
		}
		rows := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")[1:]
		if hash == nil {
			return "", rows
		}
		return hash[1], rows
	}
	for i := range n {
		h, rows := run(i, true)
		hashes = append(hashes, h)
		union = append(union, rows...)
	}
	_, whole := run(0, false)
	if u := slices.Compact(slices.Clone(hashes)); len(u) != 1 {
		t.Errorf("the copies computed different schedules: %v", hashes)
	}
	index := func(row string) int { v, _ := strconv.Atoi(row[:strings.IndexByte(row, ',')]); return v }
	slices.SortStableFunc(union, func(a, b string) int { return index(a) - index(b) })
	if len(whole) < 1000 || !slices.Equal(union, whole) {
		t.Errorf("the %d copies' schedules (%d rows) are not the whole schedule (%d rows)", n, len(union), len(whole))
	}
}
