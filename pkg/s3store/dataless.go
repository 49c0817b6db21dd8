package s3store

// Dataless marks a copy reference as carrying no object bytes: the engine
// hands it to the copy sink as it is, without reading or summing it.
func (*CopyRef) Dataless() {}
