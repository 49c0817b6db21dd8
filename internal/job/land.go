package job

import "path"

// Land says where a transfer lands: its objects are written under root,
// each at its name. A prefix (or directory) lands under dest, its objects
// named by their keys relative to it (name is ""). A single object or
// file lands at dest/<base name of src> when dest names a directory (or
// prefix), else at dest itself. Local paths and S3 keys are both
// slash-separated (s3pd runs on Linux).
func Land(single bool, src, dest string, destIsDir bool) (root, name string) {
	switch {
	case !single:
		return dest, ""
	case destIsDir:
		return dest, path.Base(src)
	}
	return path.Dir(dest), path.Base(dest)
}
