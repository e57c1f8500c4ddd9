package localbridge

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// readAtMost reads at most limit+1 bytes of the request body, so callers can tell "too large".
func readAtMost(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	return io.ReadAll(io.LimitReader(r.Body, limit+1))
}

// bodySize reports the size of an over-limit body: Content-Length when given, else what can be
// counted (bounded).
func bodySize(r *http.Request, alreadyRead int) int64 {
	if r.ContentLength > 0 {
		return r.ContentLength
	}
	n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, maxDrainCount))
	return int64(alreadyRead) + n
}

// decodeURIPath decodes %XX escapes the way JavaScript's decodeURI does: escapes of reserved
// characters (; / ? : @ & = + $ , #) stay literal. Undecodable input is returned unchanged.
func decodeURIPath(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	unhex := func(c byte) (byte, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', true
		case c >= 'a' && c <= 'f':
			return c - 'a' + 10, true
		case c >= 'A' && c <= 'F':
			return c - 'A' + 10, true
		}
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return s
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return s
		}
		c := hi<<4 | lo
		if c < 0x80 && strings.IndexByte(";/?:@&=+$,#", c) >= 0 {
			b.WriteString(s[i : i+3])
		} else {
			b.WriteByte(c)
		}
		i += 2
	}
	out := b.String()
	if !utf8.ValidString(out) {
		return s
	}
	return out
}

// handleFile: GET/PUT /v1/sandbox/{id}/file/{path…} (allocate).
func (s *Server) handleFile(w http.ResponseWriter, r *http.Request, method, id, rawPath string, allocate func() *incarnation) {
	inc := allocate()
	if inc == nil {
		return
	}
	rel := decodeURIPath(rawPath)
	if rel == "" {
		writeError(w, http.StatusBadRequest, "file path must not be empty", "invalid_request")
		return
	}
	virt, ok := resolveWorkspacePath("/" + rel)
	if !ok || strings.ContainsRune(virt, 0) {
		writeError(w, http.StatusForbidden, "path must resolve to a location within /workspace", "invalid_request")
		return
	}
	real, ok := confine(inc.workspace, virt)
	if !ok {
		writeError(w, http.StatusForbidden, "path must resolve to a location within /workspace", "invalid_request")
		return
	}
	if method == http.MethodGet {
		f, err := os.Open(real)
		if errors.Is(err, fs.ErrNotExist) {
			writeError(w, http.StatusNotFound, "File not found: "+virt, "workspace_read_not_found")
			return
		}
		if err != nil {
			writeError(w, http.StatusBadGateway, "read failed: "+cleanErr(err, inc.workspace), "exec_transport_error")
			return
		}
		defer f.Close()
		if fi, err := f.Stat(); err != nil || fi.IsDir() {
			writeError(w, http.StatusBadGateway, "read failed: EISDIR: illegal operation on a directory, read", "exec_transport_error")
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.Copy(w, f)
		return
	}
	body, err := readAtMost(r, maxPayload)
	if err != nil {
		writeError(w, http.StatusBadRequest, "Could not read request body", "invalid_request")
		return
	}
	if len(body) > maxPayload {
		writeError(w, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("payload too large: %d bytes exceeds the %d-byte limit", bodySize(r, len(body)), maxPayload),
			"payload_too_large")
		return
	}
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		writeError(w, http.StatusBadGateway, "write failed: "+cleanErr(err, inc.workspace), "workspace_archive_write_error")
		return
	}
	// Re-check after creating parents: nothing may have turned into an escaping symlink.
	if _, ok := confine(inc.workspace, virt); !ok {
		writeError(w, http.StatusForbidden, "path must resolve to a location within /workspace", "invalid_request")
		return
	}
	if err := os.WriteFile(real, body, 0o644); err != nil {
		writeError(w, http.StatusBadGateway, "write failed: "+cleanErr(err, inc.workspace), "workspace_archive_write_error")
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// cleanErr shows an error with the workspace's real location replaced by /workspace.
func cleanErr(err error, workspace string) string {
	return strings.ReplaceAll(err.Error(), workspace, "/workspace")
}

// handlePersist: POST /persist?excludes=a,b (allocate) streams a tar of the workspace.
func (s *Server) handlePersist(w http.ResponseWriter, r *http.Request, allocate func() *incarnation) {
	inc := allocate()
	if inc == nil {
		return
	}
	var excludes []string
	if v := r.URL.Query().Get("excludes"); v != "" {
		for _, e := range strings.Split(v, ",") {
			if e == "" {
				continue
			}
			if strings.Contains(e, "..") {
				writeError(w, http.StatusBadRequest, `exclude paths must not contain ".."`, "invalid_request")
				return
			}
			excludes = append(excludes, strings.Trim(filepath.Clean("/"+e), "/"))
		}
	}
	excluded := func(rel string) bool {
		for _, e := range excludes {
			if e != "" && (rel == e || strings.HasPrefix(rel, e+"/")) {
				return true
			}
		}
		return false
	}
	// Build the archive before answering so a failure is a clean 502, not a cut body.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(inc.workspace, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(inc.workspace, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if excluded(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		} else if !fi.Mode().IsRegular() && !fi.IsDir() {
			return nil // sockets, devices, fifos are not archived
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		hdr.Name = rel
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uname, hdr.Gname = "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.CopyN(tw, f, hdr.Size)
			f.Close()
			if err != nil {
				return err
			}
		}
		if buf.Len() > 1<<30 {
			return errors.New("workspace archive larger than 1 GiB")
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		writeError(w, http.StatusBadGateway, "persist failed: "+cleanErr(err, inc.workspace), "workspace_archive_read_error")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// handleHydrate: POST /hydrate (allocate) extracts a tar (1 B..32 MiB) into the workspace.
func (s *Server) handleHydrate(w http.ResponseWriter, r *http.Request, allocate func() *incarnation) {
	inc := allocate()
	if inc == nil {
		return
	}
	body, err := readAtMost(r, maxPayload)
	if err != nil {
		writeError(w, http.StatusBadRequest, "Could not read request body", "invalid_request")
		return
	}
	if len(body) == 0 {
		writeError(w, http.StatusBadRequest, "Empty tar payload", "invalid_request")
		return
	}
	if len(body) > maxPayload {
		writeError(w, http.StatusBadRequest,
			fmt.Sprintf("tar payload too large: %d bytes exceeds the %d-byte limit", bodySize(r, len(body)), maxPayload),
			"invalid_request")
		return
	}
	if err := extractTar(inc.workspace, bytes.NewReader(body)); err != nil {
		writeError(w, http.StatusBadGateway, "hydrate failed: "+cleanErr(err, inc.workspace), "workspace_archive_write_error")
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// extractTar unpacks regular files, directories and symlinks into workspace; every entry must stay
// inside it, also through symlinks created earlier in the archive.
func extractTar(workspace string, r io.Reader) error {
	tr := tar.NewReader(r)
	entries := 0
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if entries == 0 {
				return errors.New("tar extract failed: archive has no entries")
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("tar extract failed: %w", err)
		}
		entries++
		virt, ok := resolveWorkspacePath(strings.TrimPrefix(hdr.Name, "./"))
		if !ok || strings.HasPrefix(hdr.Name, "/") || strings.ContainsRune(hdr.Name, 0) {
			return fmt.Errorf("tar extract failed: entry %q escapes /workspace", hdr.Name)
		}
		if virt == "/workspace" {
			continue
		}
		real, ok := confine(workspace, virt)
		if !ok {
			return fmt.Errorf("tar extract failed: entry %q escapes /workspace", hdr.Name)
		}
		mode := fs.FileMode(hdr.Mode).Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(real, mode|0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
				return err
			}
			_ = os.Remove(real) // replace, never write through an existing symlink
			f, err := os.OpenFile(real, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode|0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
				return err
			}
			_ = os.Remove(real)
			if err := os.Symlink(hdr.Linkname, real); err != nil {
				return err
			}
		default:
			// Hard links, devices and fifos are skipped.
		}
	}
}
