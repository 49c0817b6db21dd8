//go:build amd64 && !purego

#include "textflag.h"

// Folding constants for CRC-64/NVME (reflected). For a fold of D bits a
// 128-bit lane {lo, hi} becomes clmul(lo, K_lo) ^ clmul(hi, K_hi), with
// K_lo = reflect(x^(D+63) mod P) and K_hi = reflect(x^(D-1) mod P). Each
// table repeats {K_lo, K_hi} once per 128-bit lane of a ZMM register.

#define PAIR(name, off, lo, hi) \
	DATA name+(off)(SB)/8, lo; \
	DATA name+(off+8)(SB)/8, hi

#define ZCONST(name, lo, hi) \
	PAIR(name, 0, lo, hi); \
	PAIR(name, 16, lo, hi); \
	PAIR(name, 32, lo, hi); \
	PAIR(name, 48, lo, hi); \
	GLOBL name(SB), (NOPTR+RODATA), $64

ZCONST(·k4096<>, $0xd0b3aa0ed6d54ae0, $0xc2409e2537aa5eb1)
ZCONST(·k2048<>, $0x37ccd3e14069cabc, $0xa043808c0f782663)
ZCONST(·k1024<>, $0xa1ca681e733f9c40, $0x5f852fb61e8d92dc)
ZCONST(·k512<>, $0x0c32cdb31e18a84a, $0x62242240ace5045a)

DATA ·k384<>+0(SB)/8, $0xbdd7ac0ee1a4a0f0
DATA ·k384<>+8(SB)/8, $0xa3ffdc1fe8e82a8b
GLOBL ·k384<>(SB), (NOPTR+RODATA), $16
DATA ·k256<>+0(SB)/8, $0xb0bc2e589204f500
DATA ·k256<>+8(SB)/8, $0xe1e0bb9d45d7a44c
GLOBL ·k256<>(SB), (NOPTR+RODATA), $16
DATA ·k128<>+0(SB)/8, $0xeadc41fd2ba3d420
DATA ·k128<>+8(SB)/8, $0x21e9761e252621ac
GLOBL ·k128<>(SB), (NOPTR+RODATA), $16

// FOLD folds accumulator A forward by the distance of constant K and
// xors in B: A = clmul(A.lo, K.lo) ^ clmul(A.hi, K.hi) ^ B, per lane.
#define FOLD(K, A, B, T) \
	VPCLMULQDQ $0x00, K, A, T; \
	VPCLMULQDQ $0x11, K, A, A; \
	VPTERNLOGD $0x96, B, T, A

// XFOLD folds the 128-bit lane X forward by the distance of the 16-byte
// constant at K and xors the result into ACC.
#define XFOLD(K, X, ACC) \
	VMOVDQU    K, X14; \
	VPCLMULQDQ $0x00, X14, X, X15; \
	VPCLMULQDQ $0x11, X14, X, X; \
	VPXOR      X15, ACC, ACC; \
	VPXOR      X, ACC, ACC

// func foldNVME512(crc uint64, p []byte) (lo, hi uint64)
//
// len(p) must be a non-zero multiple of 512. crc is the register value
// (already inverted). It returns the 128-bit remainder whose CRC, with a
// zero register, is the CRC of p started from crc.
TEXT ·foldNVME512(SB), NOSPLIT, $0-48
	MOVQ crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	SHRQ $9, CX

	VMOVDQU64 0x000(SI), Z0
	VMOVDQU64 0x040(SI), Z1
	VMOVDQU64 0x080(SI), Z2
	VMOVDQU64 0x0c0(SI), Z3
	VMOVDQU64 0x100(SI), Z4
	VMOVDQU64 0x140(SI), Z5
	VMOVDQU64 0x180(SI), Z6
	VMOVDQU64 0x1c0(SI), Z7
	VMOVQ     AX, X8
	VPXORQ    Z8, Z0, Z0
	ADDQ      $0x200, SI
	SUBQ      $1, CX
	JZ        reduce

	MOVQ      $·k4096<>(SB), BX
	VMOVDQU64 (BX), Z16

	PCALIGN $16
loop512:
	VMOVDQU64 0x000(SI), Z8
	VMOVDQU64 0x040(SI), Z9
	VMOVDQU64 0x080(SI), Z10
	VMOVDQU64 0x0c0(SI), Z11
	FOLD(Z16, Z0, Z8, Z24)
	FOLD(Z16, Z1, Z9, Z25)
	FOLD(Z16, Z2, Z10, Z26)
	FOLD(Z16, Z3, Z11, Z27)
	VMOVDQU64 0x100(SI), Z12
	VMOVDQU64 0x140(SI), Z13
	VMOVDQU64 0x180(SI), Z14
	VMOVDQU64 0x1c0(SI), Z15
	FOLD(Z16, Z4, Z12, Z28)
	FOLD(Z16, Z5, Z13, Z29)
	FOLD(Z16, Z6, Z14, Z30)
	FOLD(Z16, Z7, Z15, Z31)
	ADDQ      $0x200, SI
	SUBQ      $1, CX
	JNZ       loop512

reduce:
	// 8 accumulators (512 bytes) -> 4 (256) -> 2 (128) -> 1 (64).
	MOVQ      $·k2048<>(SB), BX
	VMOVDQU64 (BX), Z17
	FOLD(Z17, Z0, Z4, Z24)
	FOLD(Z17, Z1, Z5, Z25)
	FOLD(Z17, Z2, Z6, Z26)
	FOLD(Z17, Z3, Z7, Z27)
	MOVQ      $·k1024<>(SB), BX
	VMOVDQU64 (BX), Z17
	FOLD(Z17, Z0, Z2, Z24)
	FOLD(Z17, Z1, Z3, Z25)
	MOVQ      $·k512<>(SB), BX
	VMOVDQU64 (BX), Z17
	FOLD(Z17, Z0, Z1, Z24)

	// 4 lanes of Z0 -> 1: lanes 0, 1, 2 fold by 48, 32, 16 bytes into 3.
	VEXTRACTI64X2 $1, Z0, X1
	VEXTRACTI64X2 $2, Z0, X2
	VEXTRACTI64X2 $3, Z0, X3
	XFOLD(·k384<>(SB), X0, X3)
	XFOLD(·k256<>(SB), X1, X3)
	XFOLD(·k128<>(SB), X2, X3)

	VMOVQ   X3, AX
	VPEXTRQ $1, X3, DX
	VZEROUPPER
	MOVQ   AX, lo+32(FP)
	MOVQ   DX, hi+40(FP)
	RET

// YFOLD is FOLD on 256-bit registers with VEX encoding (AVX2 and
// VPCLMULQDQ, no AVX-512): A = clmul(A.lo, K.lo) ^ clmul(A.hi, K.hi) ^ B.
#define YFOLD(K, A, B, T) \
	VPCLMULQDQ $0x00, K, A, T; \
	VPCLMULQDQ $0x11, K, A, A; \
	VPXOR      T, A, A; \
	VPXOR      B, A, A

// func foldNVME256(crc uint64, p []byte) (lo, hi uint64)
//
// foldNVME512's fold on 256-bit registers: eight accumulators of 32
// bytes, 256 bytes per step. len(p) must be a non-zero multiple of 256.
TEXT ·foldNVME256(SB), NOSPLIT, $0-48
	MOVQ crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	SHRQ $8, CX

	VMOVDQU 0x00(SI), Y0
	VMOVDQU 0x20(SI), Y1
	VMOVDQU 0x40(SI), Y2
	VMOVDQU 0x60(SI), Y3
	VMOVDQU 0x80(SI), Y4
	VMOVDQU 0xa0(SI), Y5
	VMOVDQU 0xc0(SI), Y6
	VMOVDQU 0xe0(SI), Y7
	VMOVQ   AX, X8
	VPXOR   Y8, Y0, Y0
	ADDQ    $0x100, SI
	SUBQ    $1, CX
	JZ      yreduce

	MOVQ    $·k2048<>(SB), BX
	VMOVDQU (BX), Y15

	PCALIGN $16
yloop:
	VMOVDQU 0x00(SI), Y8
	VMOVDQU 0x20(SI), Y9
	VMOVDQU 0x40(SI), Y10
	VMOVDQU 0x60(SI), Y11
	YFOLD(Y15, Y0, Y8, Y12)
	YFOLD(Y15, Y1, Y9, Y13)
	YFOLD(Y15, Y2, Y10, Y14)
	YFOLD(Y15, Y3, Y11, Y12)
	VMOVDQU 0x80(SI), Y8
	VMOVDQU 0xa0(SI), Y9
	VMOVDQU 0xc0(SI), Y10
	VMOVDQU 0xe0(SI), Y11
	YFOLD(Y15, Y4, Y8, Y13)
	YFOLD(Y15, Y5, Y9, Y14)
	YFOLD(Y15, Y6, Y10, Y12)
	YFOLD(Y15, Y7, Y11, Y13)
	ADDQ    $0x100, SI
	SUBQ    $1, CX
	JNZ     yloop

yreduce:
	// 8 accumulators (256 bytes) -> 4 (128) -> 2 (64) -> 1 (32).
	MOVQ    $·k1024<>(SB), BX
	VMOVDQU (BX), Y15
	YFOLD(Y15, Y0, Y4, Y12)
	YFOLD(Y15, Y1, Y5, Y13)
	YFOLD(Y15, Y2, Y6, Y14)
	YFOLD(Y15, Y3, Y7, Y12)
	MOVQ    $·k512<>(SB), BX
	VMOVDQU (BX), Y15
	YFOLD(Y15, Y0, Y2, Y12)
	YFOLD(Y15, Y1, Y3, Y13)
	MOVQ    $·k256<>(SB), BX
	VMOVDQU (BX), X15
	VINSERTI128 $1, X15, Y15, Y15
	YFOLD(Y15, Y0, Y1, Y12)

	// 2 lanes of Y0 -> 1: lane 0 folds by 16 bytes into lane 1.
	VEXTRACTI128 $1, Y0, X3
	XFOLD(·k128<>(SB), X0, X3)

	VMOVQ   X3, AX
	VPEXTRQ $1, X3, DX
	VZEROUPPER
	MOVQ    AX, lo+32(FP)
	MOVQ    DX, hi+40(FP)
	RET

// func reduceNVME(lo, hi uint64) uint64
//
// reduceNVME is the CRC register after the 16 bytes lo, hi (little
// endian) from a zero register: the fold's 128-bit remainder reduced to
// 64 bits by one more fold (x^128 mod P) and a Barrett reduction (mu =
// x^128 / P), three carry-less multiplications and no table. The
// constants are those of minio/crc64nvme's final reduction.
TEXT ·reduceNVME(SB), NOSPLIT, $0-24
	MOVQ      lo+0(FP), X0
	MOVQ      $0x21e9761e252621ac, BX
	MOVQ      BX, X1
	PCLMULQDQ $0x00, X0, X1 // X1 = lo * K
	MOVQ      X1, CX
	XORQ      hi+8(FP), CX  // hi ^ low half of lo * K
	MOVQ      CX, X2
	MOVQ      $0x27ecfa329aef9f77, BX
	MOVQ      BX, X3
	PCLMULQDQ $0x00, X3, X2 // X2 = T1 = that * mu
	MOVQ      X2, DX
	MOVQ      $0x34d926535897936b, BX
	MOVQ      BX, X3
	PCLMULQDQ $0x00, X3, X2 // X2 = T2 = low half of T1 * P
	PXOR      X1, X2
	PEXTRQ    $1, X2, AX
	XORQ      DX, AX
	MOVQ      AX, ret+16(FP)
	RET
