package pdf

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rc4"
	"encoding/binary"
	"errors"
	"fmt"
	"image/color"
	"testing"
)

// pad is the standard security handler's password padding.
var pad = []byte{
	0x28, 0xBF, 0x4E, 0x5E, 0x4E, 0x75, 0x8A, 0x41, 0x64, 0x00, 0x4E, 0x56, 0xFF, 0xFA, 0x01, 0x08,
	0x2E, 0x2E, 0x00, 0xB6, 0xD0, 0x68, 0x3E, 0x80, 0x2F, 0x0C, 0xA9, 0xFE, 0x64, 0x53, 0x69, 0x7A,
}

func padPW(pw string) []byte { return append([]byte(pw), pad...)[:32] }
func rc4x(k, d []byte) []byte {
	c, _ := rc4.NewCipher(k)
	o := make([]byte, len(d))
	c.XORKeyStream(o, d)
	return o
}
func xk(k []byte, x byte) []byte {
	o := make([]byte, len(k))
	for i := range k {
		o[i] = k[i] ^ x
	}
	return o
}

// encPDF is a one-page document (a blue square in the lower left) encrypted
// by the standard security handler, RC4 128-bit revision 3, with the given
// user and owner passwords; user may be "" (anyone may open it).
func encPDF(user, owner string) []byte {
	id := []byte("0123456789abcdef")
	perms := int32(-3904)
	h := md5.Sum(padPW(owner))
	for range 50 {
		h = md5.Sum(h[:16])
	}
	o := rc4x(h[:16], padPW(user))
	for i := 1; i <= 19; i++ {
		o = rc4x(xk(h[:16], byte(i)), o)
	}
	d := md5.New()
	d.Write(padPW(user))
	d.Write(o)
	var p [4]byte
	binary.LittleEndian.PutUint32(p[:], uint32(perms))
	d.Write(p[:])
	d.Write(id)
	key := d.Sum(nil)
	for range 50 {
		s := md5.Sum(key[:16])
		key = s[:]
	}
	key = key[:16]
	d = md5.New()
	d.Write(pad)
	d.Write(id)
	u := rc4x(key, d.Sum(nil))
	for i := 1; i <= 19; i++ {
		u = rc4x(xk(key, byte(i)), u)
	}
	u = append(u, make([]byte, 16)...)
	ok := func(num int) []byte {
		b := append(append([]byte{}, key...), byte(num), byte(num>>8), byte(num>>16), 0, 0)
		s := md5.Sum(b)
		return s[:16]
	}
	content := rc4x(ok(4), []byte("0 0 1 rg 0 0 10 10 re f\n"))
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 50 50] /Contents 4 0 R >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
		fmt.Sprintf("<< /Filter /Standard /V 2 /R 3 /Length 128 /O <%x> /U <%x> /P %d >>", o, u, perms),
	}
	offs := []int{}
	for i, s := range objs {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, s)
	}
	x := b.Len()
	fmt.Fprintf(&b, "xref\n0 6\n0000000000 65535 f\r\n")
	for _, off := range offs {
		fmt.Fprintf(&b, "%010d 00000 n\r\n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size 6 /Root 1 0 R /Encrypt 5 0 R /ID [<%x> <%x>] >>\nstartxref\n%d\n%%%%EOF\n", id, id, x)
	return b.Bytes()
}

// TestOwnerOnlyEncryption: a document encrypted with an owner password
// only (any viewer opens it) opens whatever password the caller passes,
// as index passes one --password to every PDF of a folder; a document with
// a user password still needs it.
func TestOwnerOnlyEncryption(t *testing.T) {
	r := renderer(t)
	blue := color.RGBA{0, 0, 255, 255}
	ownerOnly := encPDF("", "ownerpw")
	for _, pw := range []string{"", "ownerpw", "a password for other files"} {
		d, err := r.Open(context.Background(), ownerOnly, pw)
		if err != nil {
			t.Errorf("owner-only encryption, password %q: %v", pw, err)
			continue
		}
		if p, err := d.Render(context.Background(), 0, 72); err != nil || p.Image.RGBAAt(5, 45) != blue {
			t.Errorf("owner-only encryption, password %q: render %v", pw, err)
		}
		d.Close()
	}
	withUser := encPDF("userpw", "ownerpw")
	for pw, want := range map[string]error{"": ErrEncrypted, "wrong": ErrPassword, "userpw": nil, "ownerpw": nil} {
		d, err := r.Open(context.Background(), withUser, pw)
		if !errors.Is(err, want) || (want == nil && err != nil) {
			t.Errorf("user password, given %q: %v, want %v", pw, err, want)
		}
		if err == nil {
			if p, err := d.Render(context.Background(), 0, 72); err != nil || p.Image.RGBAAt(5, 45) != blue {
				t.Errorf("user password, given %q: render %v", pw, err)
			}
			d.Close()
		}
	}
}
