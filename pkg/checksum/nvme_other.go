//go:build !amd64 || purego

package checksum

import "github.com/minio/crc64nvme"

// updateNVME extends the CRC-64/NVME crc with p.
func updateNVME(crc uint64, p []byte) uint64 { return crc64nvme.Update(crc, p) }
