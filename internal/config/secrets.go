package config

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/secretfile"
)

// secretFields are the yaml names of the config's file fields whose content
// is a secret: serve refuses each unless only its owner may read it
// (secretfile). identity_file may be missing (serve creates it).
var secretFields = map[string]bool{
	"api_token_file": true, "identity_file": true, "key_file": true, "key_files": true, "routing_key_file": true,
	"secret_file": true, "token_file": true, "tsig_key_file": true, "url_file": true,
}

// plainFileFields are the config's file fields that hold no secret (a
// certificate, a CA, state Meridian writes, a kubeconfig checked where it
// is read); every field named *_file or *_files is in one of the two sets
// (a test walks the config's types).
var plainFileFields = map[string]bool{
	"ca_file": true, "cert_file": true, "serial_state_file": true, "state_file": true,
}

// SecretFile is one secret file the config names.
type SecretFile struct {
	Path  string // the field's path, e.g. zones[0].transfer.tsig_key_file
	File  string // the file named
	Field string // the field's yaml name
}

// SecretFiles lists every secret file f names, in the config's order.
func (f *File) SecretFiles() []SecretFile {
	var out []SecretFile
	walkFiles(reflect.ValueOf(f).Elem(), "", func(path, field string, v string) {
		if secretFields[field] && v != "" {
			out = append(out, SecretFile{Path: path, File: v, Field: field})
		}
	})
	return out
}

// CheckSecretFiles checks every secret file f names as serve does before
// it binds a socket (secretfile.Check: present, a regular file readable by
// its owner only, owned by us or root), so that check-config refuses what
// serve would. name is the config file's name, data its content (for the
// line of each field).
func CheckSecretFiles(name string, data []byte, f *File) []Error {
	var out []Error
	for _, s := range f.SecretFiles() {
		err := secretfile.Check(s.File)
		if s.Field == "identity_file" && errors.Is(err, fs.ErrNotExist) {
			continue // made on first start
		}
		if err == nil {
			continue
		}
		msg := err.Error() // a refusal names the file and what is allowed
		if !errors.Is(err, secretfile.ErrOpen) {
			msg = fmt.Sprintf("secret file %s: %s", s.File, unwrapPath(err, s.File))
		}
		out = append(out, locate(name, data, []model.FieldError{{Path: s.Path, Msg: msg}})...)
	}
	return out
}

// unwrapPath drops a repeated "open PATH:" / "stat PATH:" from err's text.
func unwrapPath(err error, path string) string {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return pe.Err.Error()
	}
	return strings.TrimPrefix(err.Error(), "secret file: ")
}

// walkFiles calls fn for every string (or element of a []string) field of
// v whose yaml name ends in _file or _files, with its path.
func walkFiles(v reflect.Value, path string, fn func(path, field, value string)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkFiles(v.Elem(), path, fn)
		}
	case reflect.Slice:
		for i := range v.Len() {
			walkFiles(v.Index(i), fmt.Sprintf("%s[%d]", path, i), fn)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			tag, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
			if tag == "-" {
				continue
			}
			fv := v.Field(i)
			if tag == "" { // inline
				walkFiles(fv, path, fn)
				continue
			}
			p := tag
			if path != "" {
				p = path + "." + tag
			}
			switch {
			case strings.HasSuffix(tag, "_file") && fv.Kind() == reflect.String:
				fn(p, tag, fv.String())
			case strings.HasSuffix(tag, "_files") && fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.String:
				for j := range fv.Len() {
					fn(fmt.Sprintf("%s[%d]", p, j), tag, fv.Index(j).String())
				}
			default:
				walkFiles(fv, p, fn)
			}
		}
	}
}

// fileFieldNames are the yaml names of every *_file / *_files field of a
// File (for the test that each is classified).
func fileFieldNames() map[string]bool {
	out := map[string]bool{}
	var walk func(t reflect.Type, seen map[reflect.Type]bool)
	walk = func(t reflect.Type, seen map[reflect.Type]bool) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			sf := t.Field(i)
			tag, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
			if strings.HasSuffix(tag, "_file") || strings.HasSuffix(tag, "_files") {
				out[tag] = true
			}
			walk(sf.Type, seen)
		}
	}
	walk(reflect.TypeOf(File{}), map[reflect.Type]bool{})
	return out
}
