package wire

import (
	"bytes"
	"testing"
)

func TestTagInsertReadRemove(t *testing.T) {
	frame := hexBytes(t, "020000000002 020000000001 8100 2005 0800 4500001c")
	b := append(make([]byte, TagLen), frame...)
	if _, ok := ReadTag(b[TagLen:]); ok {
		t.Fatal("untagged frame reads as tagged")
	}
	delta, err := InsertTag(b, MaxQueues-1)
	if err != nil || delta != -TagLen {
		t.Fatalf("InsertTag: %d, %v", delta, err)
	}
	// The BFC tag is outermost, before the 802.1Q tag.
	want := hexBytes(t, "020000000002 020000000001 88b5 0fff 8100 2005 0800 4500001c")
	if !bytes.Equal(b, want) {
		t.Fatalf("tagged\n got  %x\n want %x", b, want)
	}
	upq, ok := ReadTag(b)
	if !ok || upq != MaxQueues-1 {
		t.Fatalf("ReadTag: %d, %v", upq, ok)
	}
	if _, err := InsertTag(append(make([]byte, TagLen), b...), 1); err != ErrTagged {
		t.Fatalf("second tag: %v", err)
	}
	delta, err = RemoveTag(b)
	if err != nil || delta != TagLen {
		t.Fatalf("RemoveTag: %d, %v", delta, err)
	}
	if !bytes.Equal(b[TagLen:], frame) {
		t.Fatalf("untagged\n got  %x\n want %x", b[TagLen:], frame)
	}
}

func TestTagRejects(t *testing.T) {
	frame := hexBytes(t, "020000000002 020000000001 0800")
	b := append(make([]byte, TagLen), frame...)
	keep := bytes.Clone(b)
	for _, c := range []struct {
		name string
		b    []byte
		upq  uint16
		want Error
	}{
		{"no headroom", frame, 1, ErrShort},
		{"13-byte frame", b[:TagLen+13], 1, ErrShort},
		{"queue 4096", b, 4096, ErrQueue},
		{"queue 65535", b, 0xffff, ErrQueue},
	} {
		if _, err := InsertTag(c.b, c.upq); err != c.want {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		if !bytes.Equal(b, keep) {
			t.Fatalf("%s: changed the frame on error", c.name)
		}
	}
	if _, err := RemoveTag(frame); err != ErrNoTag {
		t.Errorf("RemoveTag of an untagged frame: %v", err)
	}
	// A tag with no inner EtherType behind it is not a tag.
	short := hexBytes(t, "020000000002 020000000001 88b5 0001")
	if _, ok := ReadTag(short); ok {
		t.Error("16-byte frame reads as tagged")
	}
	if _, err := RemoveTag(short); err != ErrNoTag {
		t.Errorf("RemoveTag of a 16-byte frame: %v", err)
	}
	// The reserved flag bits are ignored.
	flagged := hexBytes(t, "020000000002 020000000001 88b5 f00a 0800")
	if upq, ok := ReadTag(flagged); !ok || upq != 10 {
		t.Errorf("flagged tag: %d, %v", upq, ok)
	}
}
