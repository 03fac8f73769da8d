package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n"

var testCreated = time.Unix(1796147429, 0).UTC()

func fakeSpec() spec {
	return spec{
		Binary:   []byte("\x7fELF fake meridian"),
		CABundle: []byte(testCA),
		Version:  "v1.2.3-test",
		Revision: "0123456789abcdef0123456789abcdef01234567",
		Created:  testCreated,
		Arch:     "amd64",
	}
}

func digestOf(t *testing.T, s spec) v1.Hash {
	t.Helper()
	img, err := build(s)
	require.NoError(t, err)
	d, err := img.Digest()
	require.NoError(t, err)
	return d
}

// layerFiles reads the image's one layer: every header and each file's body.
func layerFiles(t *testing.T, img v1.Image) ([]*tar.Header, map[string][]byte) {
	t.Helper()
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1, "the image is one layer on an empty base")
	mt, err := layers[0].MediaType()
	require.NoError(t, err)
	assert.Equal(t, types.OCILayer, mt)
	rc, err := layers[0].Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	var hs []*tar.Header
	bodies := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		hs = append(hs, h)
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			bodies[h.Name] = b
		}
	}
	return hs, bodies
}

func TestBuildIsReproducible(t *testing.T) {
	first := digestOf(t, fakeSpec())
	assert.Equal(t, first, digestOf(t, fakeSpec()), "two builds of the same inputs give the same digest")

	later := fakeSpec()
	later.Created = testCreated.Add(time.Second)
	assert.NotEqual(t, first, digestOf(t, later), "the created time is part of the image")

	other := fakeSpec()
	other.Binary = append(slices.Clone(other.Binary), '!')
	assert.NotEqual(t, first, digestOf(t, other), "the binary is part of the image")
}

func TestImageConfigRunsMeridianAsNonRoot(t *testing.T) {
	img, err := build(fakeSpec())
	require.NoError(t, err)
	mt, err := img.MediaType()
	require.NoError(t, err)
	assert.Equal(t, types.OCIManifestSchema1, mt)

	cf, err := img.ConfigFile()
	require.NoError(t, err)
	c := cf.Config
	assert.Equal(t, []string{"/meridian"}, c.Entrypoint)
	assert.Equal(t, []string{"serve", "--config", "/etc/meridian/config.yaml"}, c.Cmd)
	assert.Equal(t, "65532:65532", c.User)
	uid, _, ok := strings.Cut(c.User, ":")
	require.True(t, ok)
	assert.NotContains(t, []string{"", "0", "root"}, uid, "the process does not run as root")
	var ports []string
	for p := range c.ExposedPorts {
		ports = append(ports, p)
	}
	slices.Sort(ports)
	assert.Equal(t, []string{"5353/tcp", "5353/udp", "7946/tcp", "7946/udp", "8080/tcp"}, ports)
	assert.Equal(t, []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}, c.Env)
	assert.Equal(t, map[string]string{
		"org.opencontainers.image.title":       "meridian",
		"org.opencontainers.image.description": "Meridian: GSLB and authoritative DNS",
		"org.opencontainers.image.source":      "https://github.com/meridian-gslb/meridian",
		"org.opencontainers.image.url":         "https://github.com/meridian-gslb/meridian",
		"org.opencontainers.image.version":     "v1.2.3-test",
		"org.opencontainers.image.revision":    "0123456789abcdef0123456789abcdef01234567",
		"org.opencontainers.image.created":     "2026-12-01T17:50:29Z",
	}, c.Labels)
	assert.Equal(t, testCreated, cf.Created.Time)
	assert.Equal(t, "linux", cf.OS)
	assert.Equal(t, "amd64", cf.Architecture)
	require.Len(t, cf.History, 1)
	assert.Equal(t, testCreated, cf.History[0].Created.Time)

	withLicense := fakeSpec()
	withLicense.Licenses = "Apache-2.0"
	img, err = build(withLicense)
	require.NoError(t, err)
	cf, err = img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "Apache-2.0", cf.Config.Labels["org.opencontainers.image.licenses"])
}

func TestLayerHoldsTheBinaryAndCABundleOwnedByRoot(t *testing.T) {
	s := fakeSpec()
	img, err := build(s)
	require.NoError(t, err)
	hs, bodies := layerFiles(t, img)

	type file struct {
		Name     string
		Mode     int64
		Uid, Gid int
	}
	var got []file
	for _, h := range hs {
		got = append(got, file{h.Name, h.Mode, h.Uid, h.Gid})
		assert.Equal(t, testCreated, h.ModTime.UTC(), "%s has the fixed mtime", h.Name)
		assert.Empty(t, h.Uname+h.Gname, "%s names no owner", h.Name)
	}
	assert.Equal(t, []file{
		{"etc/", 0o755, 0, 0},
		{"etc/group", 0o644, 0, 0},
		{"etc/passwd", 0o644, 0, 0},
		{"etc/ssl/", 0o755, 0, 0},
		{"etc/ssl/certs/", 0o755, 0, 0},
		{"etc/ssl/certs/ca-certificates.crt", 0o644, 0, 0},
		{"meridian", 0o755, 0, 0},
		{"tmp/", 0o1777, 0, 0},
		{"var/", 0o755, 0, 0},
		{"var/lib/", 0o755, 0, 0},
		{"var/lib/meridian/", 0o700, 65532, 65532},
	}, got, "exactly these entries, sorted, files owned by root; only the state directory belongs to the process user")
	assert.Equal(t, s.Binary, bodies["meridian"])
	assert.Equal(t, s.CABundle, bodies["etc/ssl/certs/ca-certificates.crt"])
	assert.Contains(t, string(bodies["etc/passwd"]), "nonroot:x:65532:65532:")
	assert.Contains(t, string(bodies["etc/group"]), "nonroot:x:65532:")
}

func TestSpecValidationNamesTheBadInput(t *testing.T) {
	cases := []struct {
		name   string
		change func(*spec)
		want   string
	}{
		{"an empty binary is refused", func(s *spec) { s.Binary = nil }, "binary: empty"},
		{"a binary that is not ELF is refused", func(s *spec) { s.Binary = []byte("#!/bin/sh\n") }, "binary: not an ELF"},
		{"a CA bundle without a certificate is refused", func(s *spec) { s.CABundle = []byte("nothing") }, "ca bundle: no PEM"},
		{"an empty version is refused", func(s *spec) { s.Version = "" }, "version: empty"},
		{"a zero created time is refused", func(s *spec) { s.Created = time.Time{} }, "created:"},
		{"an empty arch is refused", func(s *spec) { s.Arch = "" }, "arch: empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := fakeSpec()
			c.change(&s)
			_, err := build(s)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestCreatedComesFromTheFlagOrSourceDateEpoch(t *testing.T) {
	got, err := createdFrom("1796147429", "5")
	require.NoError(t, err)
	assert.Equal(t, testCreated, got, "the flag wins over SOURCE_DATE_EPOCH")
	got, err = createdFrom("", "1796147429")
	require.NoError(t, err)
	assert.Equal(t, testCreated, got)
	_, err = createdFrom("", "")
	require.ErrorContains(t, err, "SOURCE_DATE_EPOCH")
	_, err = createdFrom("yesterday", "")
	require.ErrorContains(t, err, `-created "yesterday"`)
	_, err = createdFrom("", "-1")
	require.ErrorContains(t, err, `SOURCE_DATE_EPOCH "-1"`)
}

// TestRunWritesTheSameImageTwice runs the command as `make image` does and
// opens both outputs: the docker tarball and the OCI layout hold the image
// whose digest it printed, and a second run writes the same bytes.
func TestRunWritesTheSameImageTwice(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "meridian")
	ca := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(bin, fakeSpec().Binary, 0o755))
	require.NoError(t, os.WriteFile(ca, []byte(testCA), 0o644))
	tarPath := filepath.Join(dir, "out", "meridian-image.tar")
	ociDir := filepath.Join(dir, "out", "oci")
	args := []string{"-binary", bin, "-ca-bundle", ca, "-version", "v1.2.3-test", "-revision", "abc",
		"-created", "1796147429", "-tar", tarPath, "-oci", ociDir}

	var out1, out2 bytes.Buffer
	require.NoError(t, run(args, &out1))
	tar1, err := os.ReadFile(tarPath)
	require.NoError(t, err)
	require.NoError(t, run(args, &out2))
	tar2, err := os.ReadFile(tarPath)
	require.NoError(t, err)
	assert.Equal(t, out1.String(), out2.String())
	assert.True(t, bytes.Equal(tar1, tar2), "the second run writes the same tarball")

	m := regexp.MustCompile(`^ghcr\.io/meridian-gslb/meridian:v1\.2\.3-test@(sha256:[0-9a-f]{64})\n`).FindStringSubmatch(out1.String())
	require.NotNil(t, m, "prints reference@digest first: %q", out1.String())
	printed, err := v1.NewHash(m[1])
	require.NoError(t, err)

	tag, err := name.NewTag("ghcr.io/meridian-gslb/meridian:v1.2.3-test")
	require.NoError(t, err)
	fromTar, err := tarball.ImageFromPath(tarPath, &tag)
	require.NoError(t, err)
	// A docker tarball keeps the config and layers but not the manifest
	// (docker load makes its own): the config digest is the image ID.
	idx0, err := layout.ImageIndexFromPath(ociDir)
	require.NoError(t, err)
	want, err := idx0.Image(printed)
	require.NoError(t, err)
	wantConfig, err := want.ConfigName()
	require.NoError(t, err)
	gotConfig, err := fromTar.ConfigName()
	require.NoError(t, err)
	assert.Equal(t, wantConfig, gotConfig, "the tarball holds the printed image's config under the tag")
	wantLayers, err := want.Layers()
	require.NoError(t, err)
	gotLayers, err := fromTar.Layers()
	require.NoError(t, err)
	require.Len(t, gotLayers, 1)
	wantDiff, err := wantLayers[0].DiffID()
	require.NoError(t, err)
	gotDiff, err := gotLayers[0].DiffID()
	require.NoError(t, err)
	assert.Equal(t, wantDiff, gotDiff, "and its layer")

	idx, err := layout.ImageIndexFromPath(ociDir)
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1, "the layout holds this image only, also on a second run")
	assert.Equal(t, printed, im.Manifests[0].Digest)
	assert.Equal(t, tag.String(), im.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	fromLayout, err := idx.Image(printed)
	require.NoError(t, err)
	_, bodies := layerFiles(t, fromLayout)
	assert.Equal(t, fakeSpec().Binary, bodies["meridian"])

	var bad bytes.Buffer
	err = run([]string{"-binary", filepath.Join(dir, "missing"), "-created", "1", "-version", "v1"}, &bad)
	require.ErrorContains(t, err, "binary:")
}

// meridianBinary is the static binary `make build` writes (MERIDIAN_BIN,
// version MERIDIAN_VERSION), or one built here the same way.
func meridianBinary(t *testing.T) (path, version string) {
	t.Helper()
	if p := os.Getenv("MERIDIAN_BIN"); p != "" {
		v := os.Getenv("MERIDIAN_VERSION")
		require.NotEmpty(t, v, "MERIDIAN_VERSION: the version MERIDIAN_BIN was built with")
		return p, v
	}
	version = "v0.0.0-imagetest"
	path = filepath.Join(t.TempDir(), "meridian")
	cmd := exec.Command("go", "build", "-trimpath",
		"-ldflags", "-s -w -X github.com/meridian-gslb/meridian/internal/app.Version="+version,
		"-o", path, "./cmd/meridian")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return path, version
}

// TestImageBinaryRunsVersion puts the real binary into the image, takes it
// out of the layer again and runs it: static (no ELF interpreter, so it runs
// on an empty base), stripped, and it prints its version.
func TestImageBinaryRunsVersion(t *testing.T) {
	binPath, version := meridianBinary(t)
	bin, err := os.ReadFile(binPath)
	require.NoError(t, err)
	ca := []byte(testCA)
	if b, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		ca = b
	}
	s := spec{Binary: bin, CABundle: ca, Version: version, Created: testCreated, Arch: runtime.GOARCH}
	img, err := build(s)
	require.NoError(t, err)
	_, bodies := layerFiles(t, img)
	require.Equal(t, bin, bodies["meridian"])

	dir := t.TempDir()
	extracted := filepath.Join(dir, "meridian")
	require.NoError(t, os.WriteFile(extracted, bodies["meridian"], 0o755))

	f, err := elf.Open(extracted)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "the binary is static: an empty base has no dynamic loader")
	}
	assert.Nil(t, f.Section(".symtab"), "the binary is stripped (-s)")
	assert.Nil(t, f.Section(".debug_info"), "the binary has no DWARF (-w)")

	cmd := exec.Command(extracted, "version")
	cmd.Dir = dir
	cmd.Env = []string{}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `^meridian `+regexp.QuoteMeta(version)+` \(go[0-9.]+ linux/`+runtime.GOARCH+`\)\n$`, string(out))
}

// TestDockerfileAndKustomizeMatchTheImage keeps the three descriptions of
// the container in step: the Dockerfile, this builder and the kustomize
// StatefulSet (user, ports, entrypoint and config path).
func TestDockerfileAndKustomizeMatchTheImage(t *testing.T) {
	df, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	require.NoError(t, err)
	d := string(df)
	assert.Contains(t, d, "\nUSER 65532:65532\n")
	assert.Contains(t, d, "\nENTRYPOINT [\"/meridian\"]\n")
	assert.Contains(t, d, "\nCMD [\"serve\", \"--config\", \"/etc/meridian/config.yaml\"]\n")
	assert.Contains(t, d, "\nEXPOSE "+strings.Join(exposedPorts, " ")+"\n")
	assert.Contains(t, d, "\nENV SSL_CERT_FILE="+caBundlePath+"\n")
	assert.Contains(t, d, "CGO_ENABLED=0")
	assert.Contains(t, d, `-trimpath -ldflags "-s -w`)
	assert.Contains(t, d, "\nFROM scratch\n", "the final stage has no shell")

	dep, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kustomize", "base", "statefulset.yaml"))
	require.NoError(t, err)
	k := string(dep)
	assert.Contains(t, k, "image: ghcr.io/meridian-gslb/meridian:")
	assert.Contains(t, k, `args: ["serve", "--config", "`+configPath+`"]`)
	assert.Contains(t, k, "runAsUser: 65532\n")
	assert.Contains(t, k, "runAsGroup: 65532\n")
	assert.Contains(t, k, "mountPath: "+stateDir+"\n")
	for _, p := range exposedPorts {
		port, proto, _ := strings.Cut(p, "/")
		assert.Regexp(t, `containerPort: `+port+`\n\s+protocol: `+strings.ToUpper(proto)+`\n`, k)
	}
}
