package raid

// btrfsStripe is the unit btrfs raid0 stripes data in.
const btrfsStripe = 64 << 10

// minPartSize is the smallest part PartSize suggests: s3pd's default.
const minPartSize = 8 << 20

// Unit is what one member takes before the next: the chunk (md) or
// btrfs's fixed 64 KiB.
func (p *Plan) Unit() int64 {
	if p.Spec.Striping == StripingBtrfs {
		return btrfsStripe
	}
	return p.Spec.Chunk
}

// Stripe is the bytes of one full stripe of the volume: the unit times
// the members.
func (p *Plan) Stripe() int64 { return p.Unit() * int64(len(p.Members)) }

// PartSize is the part size that matches the stripe: the smallest
// multiple of a full stripe of at least 8 MiB. Every part then starts
// on a stripe and covers whole stripes, so a part's write reaches every
// member at once and none is split between two parts' writes.
func (p *Plan) PartSize() int64 {
	s := p.Stripe()
	if s <= 0 {
		return minPartSize
	}
	return (minPartSize + s - 1) / s * s
}
