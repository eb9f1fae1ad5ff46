package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// entry is one file or directory of a layer; owned by root unless uid says otherwise.
type entry struct {
	path     string // absolute, inside the image
	mode     int64
	dir      bool
	uid, gid int
	data     []byte
}

// layer is a gzip-compressed tar of entries, and of their parent directories, in path
// order and with every timestamp set to when: the same entries give the same digest.
func layer(when time.Time, entries []entry) (v1.Layer, error) {
	byPath := map[string]entry{}
	for _, e := range entries {
		byPath[e.path] = e
		for dir := path.Dir(e.path); dir != "/"; dir = path.Dir(dir) {
			if _, ok := byPath[dir]; !ok {
				byPath[dir] = entry{path: dir, mode: 0o755, dir: true}
			}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		e := byPath[p]
		hdr := &tar.Header{
			Name:    strings.TrimPrefix(p, "/"),
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: when,
			Format:  tar.FormatPAX,
		}
		if e.dir {
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		} else {
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
}

// staticBase is what a static Go binary needs around it, as in distroless/static: the
// Mozilla CA certificates (Debian's ca-certificates package), the IANA time zone database
// (the copy the Go toolchain ships, so the same Go gives the same files), users root,
// nonroot (65532) and nobody, and a world-writable /tmp.
func staticBase(when time.Time) (v1.Layer, error) {
	entries := []entry{
		{path: "/etc/passwd", mode: 0o644, data: []byte(
			"root:x:0:0:root:/root:/sbin/nologin\n" +
				"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
				"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{path: "/etc/group", mode: 0o644, data: []byte("root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n")},
		{path: "/etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{path: "/root", mode: 0o700, dir: true},
		{path: "/home/nonroot", mode: 0o700, dir: true, uid: 65532, gid: 65532},
		{path: "/tmp", mode: 0o1777, dir: true},
	}
	certs, err := caBundle("/usr/share/ca-certificates/mozilla")
	if err != nil {
		return nil, err
	}
	entries = append(entries, entry{path: "/etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: certs})
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOROOT: %w", err)
	}
	zones, err := zoneinfo(filepath.Join(strings.TrimSpace(string(goroot)), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		return nil, err
	}
	return layer(when, append(entries, zones...))
}

// caBundle concatenates the certificates of dir in name order.
func caBundle(dir string) ([]byte, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.crt"))
	if err != nil || len(names) == 0 {
		return nil, fmt.Errorf("no CA certificates in %s: install Debian's ca-certificates package", dir)
	}
	sort.Strings(names)
	var bundle bytes.Buffer
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		bundle.Write(bytes.TrimSpace(b))
		bundle.WriteByte('\n')
	}
	return bundle.Bytes(), nil
}

// zoneinfo unpacks the Go toolchain's zoneinfo.zip under /usr/share/zoneinfo, where Go's
// time package (and everything else) looks first.
func zoneinfo(zipPath string) ([]entry, error) {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return nil, fmt.Errorf("time zone database: %w", err)
	}
	defer zr.Close()
	var entries []entry
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
		if !filepath.IsLocal(f.Name) {
			return nil, fmt.Errorf("time zone database: %q is not a relative path inside it", f.Name)
		}
		entries = append(entries, entry{path: path.Join("/usr/share/zoneinfo", f.Name), mode: 0o644, data: b}) //nolint:gosec // G305: f.Name is checked local above
	}
	return entries, nil
}
