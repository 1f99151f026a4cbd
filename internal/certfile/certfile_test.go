package certfile

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writePair writes a self-signed certificate for cn and its key.
func writePair(t *testing.T, dir, cn string, mod time.Time) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{cn}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cp, kp := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cp, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kp, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{cp, kp} {
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	return cp, kp
}

func commonName(t *testing.T, r *Reloader) string {
	t.Helper()
	c, err := r.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	x, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return x.Subject.CommonName
}

func TestReload(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cp, kp := writePair(t, dir, "one.test", t0)
	r, err := New(cp, kp)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	r.OnError = func(err error) { errs = append(errs, err) }
	if got := commonName(t, r); got != "one.test" {
		t.Fatalf("first certificate %q, want one.test", got)
	}
	writePair(t, dir, "two.test", t0.Add(time.Minute))
	if got := commonName(t, r); got != "two.test" {
		t.Fatalf("after rotation %q, want two.test", got)
	}
	// A half-written key keeps the previous certificate and says so.
	if err := os.WriteFile(kp, []byte("-----BEGIN"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := commonName(t, r); got != "two.test" || len(errs) == 0 {
		t.Fatalf("after a broken key: %q, errors %v; want two.test and an error", got, errs)
	}
	writePair(t, dir, "three.test", t0.Add(2*time.Minute))
	if got := commonName(t, r); got != "three.test" {
		t.Fatalf("after repair %q, want three.test", got)
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := New(filepath.Join(dir, "no.pem"), filepath.Join(dir, "no-key.pem")); err == nil {
		t.Error("New with missing files succeeded")
	}
	cp, _ := writePair(t, dir, "x.test", time.Now())
	if _, err := New(cp, cp); err == nil {
		t.Error("New with the certificate as key succeeded")
	}
}
