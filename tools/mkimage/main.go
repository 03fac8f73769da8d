// Command mkimage builds Meridian's container image without a container
// daemon: the static meridian binary and a CA bundle in one layer on an empty
// base, written as a `docker load` tarball and an OCI image layout.
//
// The image is reproducible: every file and directory has the same mtime (the
// commit time, or -created), fixed owners and modes, tar entries are sorted,
// and the config's dates are that same time, so two runs over the same binary
// and CA bundle give the same digest. It prints the digest.
//
// It lives in a module of its own (like staticcheck in tools/) so that
// go-containerregistry's dependencies never change the versions the meridian
// binary is built with. `make image` runs it; see deploy/README.md.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed layout and runtime settings. They match
// deploy/kustomize/base/statefulset.yaml (user, ports, config path) and the
// Dockerfile at the repository root.
const (
	binaryPath   = "/meridian"
	caBundlePath = "/etc/ssl/certs/ca-certificates.crt"
	stateDir     = "/var/lib/meridian"
	configPath   = "/etc/meridian/config.yaml"
	sourceURL    = "https://github.com/meridian-gslb/meridian"
	// nonRoot is the process's uid and gid (distroless's "nonroot"); files
	// belong to root, so the process cannot change its own binary.
	nonRoot = 65532
)

// exposedPorts are the container ports of the kustomize base: DNS on 5353
// (a non-root process without capabilities cannot bind 53; Service
// meridian-dns maps 53 to it), HTTP on 8080, the prober ring on 7946.
var exposedPorts = []string{"5353/udp", "5353/tcp", "8080/tcp", "7946/udp", "7946/tcp"}

// spec is what one image is built from.
type spec struct {
	Binary   []byte    // the static meridian binary
	CABundle []byte    // PEM CA certificates
	Version  string    // org.opencontainers.image.version (the binary's app.Version)
	Revision string    // org.opencontainers.image.revision: the commit
	Licenses string    // org.opencontainers.image.licenses (SPDX); empty: no label
	Created  time.Time // every mtime and the image's created date
	Arch     string    // GOARCH the binary was built for
}

func (s spec) validate() error {
	switch {
	case len(s.Binary) == 0:
		return errors.New("binary: empty; build it first (make build)")
	case !bytes.HasPrefix(s.Binary, []byte("\x7fELF")):
		return errors.New("binary: not an ELF executable; the image runs a linux binary")
	case !bytes.Contains(s.CABundle, []byte("-----BEGIN CERTIFICATE-----")):
		return errors.New("ca bundle: no PEM certificate in it")
	case s.Version == "":
		return errors.New("version: empty; pass -version")
	case s.Created.IsZero() || s.Created.Unix() <= 0:
		return fmt.Errorf("created: %v is not a time after 1970; pass -created (unix seconds) or SOURCE_DATE_EPOCH", s.Created)
	case s.Arch == "":
		return errors.New("arch: empty; pass -arch")
	}
	return nil
}

// entry is one file or directory of the layer.
type entry struct {
	name     string // no leading slash; directories end in "/"
	mode     int64
	uid, gid int
	body     []byte
}

// entries lists the layer's content, sorted by name (parents sort before
// their children). Besides the binary and the CA bundle: /etc/passwd and
// /etc/group naming root and nonroot (so tools that map uids to names work),
// /tmp, and the state directory owned by the process user so that
// server.state_dir works without a volume too.
func entries(s spec) []entry {
	passwd := "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:" + stateDir + ":/sbin/nologin\n"
	group := "root:x:0:\nnonroot:x:65532:\n"
	es := []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, body: []byte(group)},
		{name: "etc/passwd", mode: 0o644, body: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: strings.TrimPrefix(caBundlePath, "/"), mode: 0o644, body: s.CABundle},
		{name: strings.TrimPrefix(binaryPath, "/"), mode: 0o755, body: s.Binary},
		{name: "tmp/", mode: 0o1777},
		{name: "var/", mode: 0o755},
		{name: "var/lib/", mode: 0o755},
		{name: strings.TrimPrefix(stateDir, "/") + "/", mode: 0o700, uid: nonRoot, gid: nonRoot},
	}
	slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	return es
}

// layerTar writes the layer as an uncompressed tar with fixed headers.
func layerTar(s spec) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := s.Created.UTC().Truncate(time.Second)
	for _, e := range entries(s) {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar header %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, fmt.Errorf("tar body %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("tar: %w", err)
	}
	return buf.Bytes(), nil
}

// labels are the OCI annotations of the image config.
func labels(s spec) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "meridian",
		"org.opencontainers.image.description": "Meridian: GSLB and authoritative DNS",
		"org.opencontainers.image.source":      sourceURL,
		"org.opencontainers.image.url":         sourceURL,
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.created":     s.Created.UTC().Format(time.RFC3339),
	}
	if s.Revision != "" {
		l["org.opencontainers.image.revision"] = s.Revision
	}
	if s.Licenses != "" {
		l["org.opencontainers.image.licenses"] = s.Licenses
	}
	return l
}

// build assembles the image in memory.
func build(s spec) (v1.Image, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	raw, err := layerTar(s)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	created := v1.Time{Time: s.Created.UTC().Truncate(time.Second)}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   created,
			CreatedBy: "tools/mkimage: /meridian, " + caBundlePath + ", /etc/passwd, /etc/group, /tmp, " + stateDir,
			Comment:   "make image",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS = "linux"
	cf.Architecture = s.Arch
	ports := map[string]struct{}{}
	for _, p := range exposedPorts {
		ports[p] = struct{}{}
	}
	cf.Config = v1.Config{
		Entrypoint:   []string{binaryPath},
		Cmd:          []string{"serve", "--config", configPath},
		User:         strconv.Itoa(nonRoot) + ":" + strconv.Itoa(nonRoot),
		ExposedPorts: ports,
		Env:          []string{"SSL_CERT_FILE=" + caBundlePath},
		WorkingDir:   "/",
		Labels:       labels(s),
		StopSignal:   "SIGTERM",
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return img, nil
}

// writeTarball writes the `docker load` tarball, tagged ref, through a
// temporary file so a failed run leaves no half-written tarball.
func writeTarball(path string, ref name.Tag, img v1.Image) error {
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("tarball %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("tarball %s: %w", path, err)
	}
	return nil
}

// writeLayout replaces dir with an OCI image layout holding img alone,
// annotated with its reference name.
func writeLayout(dir string, ref name.Tag, img v1.Image) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("oci layout %s: %w", dir, err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("oci layout %s: %w", dir, err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.String(),
	})); err != nil {
		return fmt.Errorf("oci layout %s: %w", dir, err)
	}
	return nil
}

// createdFrom reads the build time: -created, else SOURCE_DATE_EPOCH.
func createdFrom(flagValue, env string) (time.Time, error) {
	v, what := flagValue, "-created"
	if v == "" {
		v, what = env, "SOURCE_DATE_EPOCH"
	}
	if v == "" {
		return time.Time{}, errors.New("created: pass -created (unix seconds, e.g. `git log -1 --format=%ct`) or set SOURCE_DATE_EPOCH")
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil || sec <= 0 {
		return time.Time{}, fmt.Errorf("%s %q: want unix seconds after 1970", what, v)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// run is mkimage: it reads the flags, builds the image, writes it and
// prints its digest.
func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	binary := fs.String("binary", "bin/meridian", "the static meridian binary (CGO_ENABLED=0)")
	caBundle := fs.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM CA bundle copied to "+caBundlePath)
	version := fs.String("version", "", "the version (label org.opencontainers.image.version, and the tag)")
	revision := fs.String("revision", "", "the commit (label org.opencontainers.image.revision)")
	licenses := fs.String("licenses", "", "SPDX license expression (label org.opencontainers.image.licenses); empty: no label")
	created := fs.String("created", "", "unix seconds for every mtime and the created date (default $SOURCE_DATE_EPOCH)")
	arch := fs.String("arch", runtime.GOARCH, "GOARCH of the binary")
	repo := fs.String("repo", "ghcr.io/meridian-gslb/meridian", "the image's repository; the tag is -version")
	tarPath := fs.String("tar", "bin/meridian-image.tar", "`docker load` tarball to write; empty: none")
	ociDir := fs.String("oci", "bin/oci", "OCI image layout directory to write (replaced); empty: none")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	t, err := createdFrom(*created, os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		return err
	}
	bin, err := os.ReadFile(*binary)
	if err != nil {
		return fmt.Errorf("binary: %w", err)
	}
	ca, err := os.ReadFile(*caBundle)
	if err != nil {
		return fmt.Errorf("ca bundle: %w (on Debian: apt-get install ca-certificates, or pass -ca-bundle)", err)
	}
	ref, err := name.NewTag(*repo + ":" + *version)
	if err != nil {
		return fmt.Errorf("-repo %q / -version %q: not an image reference: %w", *repo, *version, err)
	}
	img, err := build(spec{Binary: bin, CABundle: ca, Version: *version, Revision: *revision, Licenses: *licenses, Created: t, Arch: *arch})
	if err != nil {
		return err
	}
	if err := writeImage(*tarPath, *ociDir, ref, img); err != nil {
		return err
	}
	return printImage(stdout, ref, img, *tarPath, *ociDir)
}

// writeImage writes img as a `docker load` tarball to tarPath and as an OCI
// layout to ociDir; an empty path skips that output.
func writeImage(tarPath, ociDir string, ref name.Tag, img v1.Image) error {
	if tarPath != "" {
		if err := os.MkdirAll(filepath.Dir(tarPath), 0o755); err != nil {
			return err
		}
		if err := writeTarball(tarPath, ref, img); err != nil {
			return err
		}
	}
	if ociDir != "" {
		if err := writeLayout(ociDir, ref, img); err != nil {
			return err
		}
	}
	return nil
}

// printImage prints the image's reference with its digest, its image ID,
// its compressed size and where it was written.
func printImage(stdout io.Writer, ref name.Tag, img v1.Image, tarPath, ociDir string) error {
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("digest: %w", err)
	}
	config, err := img.ConfigName()
	if err != nil {
		return fmt.Errorf("config digest: %w", err)
	}
	size, err := compressedSize(img)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s@%s\n", ref, digest)
	fmt.Fprintf(stdout, "image ID (config digest, as `docker load` shows it) %s\n", config)
	fmt.Fprintf(stdout, "compressed size %d bytes (%.1f MiB)", size, float64(size)/(1<<20))
	if tarPath != "" {
		fmt.Fprintf(stdout, "; tarball %s", tarPath)
	}
	if ociDir != "" {
		fmt.Fprintf(stdout, "; OCI layout %s", ociDir)
	}
	fmt.Fprintln(stdout)
	return nil
}

// compressedSize is what a registry stores: manifest, config and layers.
func compressedSize(img v1.Image) (int64, error) {
	m, err := img.RawManifest()
	if err != nil {
		return 0, fmt.Errorf("manifest: %w", err)
	}
	c, err := img.RawConfigFile()
	if err != nil {
		return 0, fmt.Errorf("config: %w", err)
	}
	size := int64(len(m) + len(c))
	layers, err := img.Layers()
	if err != nil {
		return 0, fmt.Errorf("layers: %w", err)
	}
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return 0, fmt.Errorf("layer size: %w", err)
		}
		size += n
	}
	return size, nil
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}
