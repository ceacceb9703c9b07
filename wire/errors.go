package wire

// Error says why a builder or parser refused its input. It is a small
// integer, so returning it as an error never allocates, errors.Is works with
// ==, and a caller that counts malformed frames by kind can index an array
// with it (every value is below NumErrors).
type Error uint8

// The errors of the package. Parsers return the first check that fails, in
// the order the fields appear on the wire.
const (
	ErrShort     Error = iota + 1 // the input is shorter than the fixed header being read
	ErrBuffer                     // a builder's buffer is too small for the frame or message
	ErrMagic                      // the GC header does not start with "GC"
	ErrVersion                    // the GC header's version is not 1
	ErrType                       // the GC type is not one of the known types (table in Type)
	ErrWrongType                  // a known type, but not one this function reads or builds
	ErrLength                     // the GC length is below the type's minimum body, or too short for the body's own fields (BITMAP bits)
	ErrTruncated                  // a length field (GC length, IPv4 total length) points beyond the bytes available
	ErrQueue                      // a queue number is >= MaxQueues, or not 0 where the format says 0
	ErrNQueues                    // BITMAP nqueues is 0 or > MaxQueues, or a PAUSE/RESUME has nqueues != 0
	ErrBitmap                     // a BITMAP has bits set at or beyond nqueues in its last byte
	ErrEthernet                   // wrong EtherType, or a link-local frame not sent to LinkLocalDst
	ErrIPv4                       // not an IPv4 header gswitch sends: version, IHL != 5, fragment, reserved flag, protocol not UDP, total length too small
	ErrChecksum                   // the IPv4 header checksum, or a non-zero UDP checksum, is wrong
	ErrUDP                        // the UDP length does not match the IPv4 total length
	ErrQuote                      // a BTS quote without a full IPv4 header, or longer than the rule allows (see BTS)
	ErrOffset                     // a builder's L3/L4 offsets do not fit the original frame or each other
	ErrDSCP                       // a DSCP above 63
	ErrTagged                     // InsertTag: the frame already starts with a BFC tag
	ErrNoTag                      // RemoveTag: the frame carries no BFC tag
	numErrors
)

// NumErrors is one more than the largest Error: the size of an array indexed
// by Error.
const NumErrors = int(numErrors)

var errorNames = [...]string{
	"ok", "short", "buffer", "magic", "version", "type", "wrong_type", "length",
	"truncated", "queue", "nqueues", "bitmap", "ethernet", "ipv4", "checksum",
	"udp", "quote", "offset", "dscp", "tagged", "no_tag",
}

// String returns a short snake_case name, usable as a metric label.
func (e Error) String() string {
	if int(e) < len(errorNames) {
		return errorNames[e]
	}
	return "unknown"
}

func (e Error) Error() string { return "wire: " + e.String() }
