package fleet

// FanOut is how many nodes of an object's order ask each node of it for
// the object (the relay tree, holder). Two: the owner's uplink carries
// each object of its share twice, not N-1 times, while the tree stays
// log2 N deep, and each level waits for the one above to land the
// object whole before it can serve it (3 levels for 8 nodes, 6 for 64).
const FanOut = 2

// parent is the position, in an object's order, of the node that the
// node at position p >= 1 asks for the object: with FanOut 2, positions
// 1 and 2 ask the owner (0), 3 and 4 ask 1, 5 and 6 ask 2. It is always
// before p, so no node waits on a chain that waits on itself.
func parent(p int) int { return (p - 1) / FanOut }

// holder is the node to ask for the object named key, this node itself
// when it fetches it from the wrapped source, -1 for none. The object's
// order (its owner, then Backup 1, 2, ...) is a tree: the node at
// position p asks the one at parent(p), else, once that one is
// bypassed, the one at parent(parent(p)), and so on up to the owner.
// When the chain reaches a bypassed owner, the first node of the order
// not bypassed stands in for the owner (and fetches the object from the
// wrapped source when it is this one), so that the share of a node that
// is gone is still split between the others by its backups.
func (sh *shared) holder(key string) int {
	owner := sh.opts.Owner(key)
	if owner < 0 || owner >= len(sh.peers) || owner == sh.opts.Self {
		return owner
	}
	for q := parent(sh.position(key)); q > 0; q = parent(q) {
		if k := sh.opts.Backup(key, q); k >= 0 && k < len(sh.peers) && !sh.peers[k].isBypassed() {
			return k
		}
	}
	return sh.firstLive(key)
}

// position is where this node stands in the order of the object named
// key, another node's: i for its i-th backup; 0 when it is not in the
// order (no Backup), so that it asks the owner.
func (sh *shared) position(key string) int {
	if sh.opts.Backup == nil {
		return 0
	}
	for i := 1; i < len(sh.peers); i++ {
		switch sh.opts.Backup(key, i) {
		case sh.opts.Self:
			return i
		case -1:
			return 0
		}
	}
	return 0
}

// firstLive is the object's owner, else the first of its backups not
// bypassed (this node, at the latest, when it is in the order); -1 for
// none.
func (sh *shared) firstLive(key string) int {
	k := sh.opts.Owner(key)
	for i := 1; k >= 0 && k < len(sh.peers); i++ {
		if k == sh.opts.Self || !sh.peers[k].isBypassed() {
			return k
		}
		if sh.opts.Backup == nil || i >= len(sh.peers) {
			return -1
		}
		k = sh.opts.Backup(key, i)
	}
	return -1
}
