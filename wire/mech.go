package wire

// The gsperf header's mechanism field (offset 56, 8 bytes, big-endian; read
// as one uint64, gsperf.Header.Mech, it is the value below):
//
//	BFC mode:         bytes 56-57 flags:4 (0) | upstreamQ:12, bytes 58-63 zero.
//	                  upstreamQ is the host's NIC queue of the flow, which the
//	                  first switch uses as the upstream queue of pauses it
//	                  sends to that host.
//	ExpressPass mode: credit_seq:32 | sent_time:32, echoed from the credit
//	                  that allowed the segment.
//	otherwise zero.

// MechBFC returns the mechanism field of a BFC-mode segment of upstream
// queue upq, or ErrQueue if upq >= MaxQueues.
func MechBFC(upq uint16) (uint64, error) {
	if upq >= MaxQueues {
		return 0, ErrQueue
	}
	return uint64(upq) << 48, nil
}

// MechBFCQueue returns the upstream queue of a BFC-mode mechanism field (the
// reserved flag bits and bytes 58-63 are ignored).
func MechBFCQueue(mech uint64) uint16 { return uint16(mech>>48) & (MaxQueues - 1) }

// MechXP returns the mechanism field of an ExpressPass-mode segment sent on
// the credit (seq, sentTime).
func MechXP(seq, sentTime uint32) uint64 { return uint64(seq)<<32 | uint64(sentTime) }

// MechXPCredit returns the credit_seq and sent_time an ExpressPass-mode
// mechanism field echoes.
func MechXPCredit(mech uint64) (seq, sentTime uint32) { return uint32(mech >> 32), uint32(mech) }
