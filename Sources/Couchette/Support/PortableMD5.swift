/// MD5 (RFC 1321) in Swift, fed in pieces without allocating.
///
/// Revision ids hash a flag, the parent id and the body where they lie (no joined copy), and for
/// the few hundred bytes of a document this is faster than a call into OpenSSL 3, which looks the
/// algorithm up and allocates and wipes a context on every digest. It also keeps revision ids
/// working where OpenSSL refuses MD5 (a FIPS-only configuration).
///
/// ```swift
/// var md5 = PortableMD5()
/// md5.update(byte: 0)
/// body.withUnsafeBytes { md5.update($0) }
/// let digest = md5.finish()   // 16 bytes
/// ```
struct PortableMD5 {
    private var state: (UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476)
    /// The bytes of an unfinished block (at most 63 between calls).
    private var pending: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var pendingCount = 0
    private var length: UInt64 = 0

    init() {}

    /// The digest of `message` in one call.
    static func digest(_ message: [UInt8]) -> [UInt8] {
        var md5 = PortableMD5()
        message.withUnsafeBytes { md5.update($0) }
        return md5.finish()
    }

    mutating func update(byte: UInt8) {
        withUnsafeBytes(of: byte) { update($0) }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard var input = bytes.baseAddress else { return }
        var remaining = bytes.count
        length &+= UInt64(remaining)
        if pendingCount > 0 {
            let taken = min(64 - pendingCount, remaining)
            withUnsafeMutableBytes(of: &pending) { block in
                (block.baseAddress! + pendingCount).copyMemory(from: input, byteCount: taken)
            }
            pendingCount += taken
            input += taken
            remaining -= taken
            guard pendingCount == 64 else { return }
            let block = pending
            withUnsafeBytes(of: block) { compress($0.baseAddress!) }
            pendingCount = 0
        }
        while remaining >= 64 {
            compress(input)
            input += 64
            remaining -= 64
        }
        if remaining > 0 {
            withUnsafeMutableBytes(of: &pending) { block in block.baseAddress!.copyMemory(from: input, byteCount: remaining) }
            pendingCount = remaining
        }
    }

    /// Pads, processes the last block and returns the 16 digest bytes. Call once.
    mutating func finish() -> [UInt8] {
        let words = finishWords()
        return withUnsafeBytes(of: (words.0.littleEndian, words.1.littleEndian)) { Array($0) }
    }

    /// ``finish()`` as two words read little-endian from the digest bytes (the form records keep,
    /// see ``StoredRevisionID``). Call once.
    mutating func finishWords() -> (UInt64, UInt64) {
        let bitLength = length &* 8
        var padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &padding) { $0[0] = 0x80 }
        let paddingCount = (pendingCount < 56 ? 56 : 120) - pendingCount  // 1...64
        withUnsafeBytes(of: padding) { update(UnsafeRawBufferPointer(rebasing: $0[..<paddingCount])) }
        withUnsafeBytes(of: bitLength.littleEndian) { update($0) }
        let (a, b, c, d) = state
        return (UInt64(a) | UInt64(b) << 32, UInt64(c) | UInt64(d) << 32)
    }

    @inline(__always) private static func rotate(_ x: UInt32, _ s: UInt32) -> UInt32 { x << s | x >> (32 - s) }
    @inline(__always) private static func f(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ x: UInt32, _ s: UInt32) -> UInt32 {
        b &+ rotate(a &+ ((b & c) | (~b & d)) &+ x, s)
    }
    @inline(__always) private static func g(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ x: UInt32, _ s: UInt32) -> UInt32 {
        b &+ rotate(a &+ ((b & d) | (c & ~d)) &+ x, s)
    }
    @inline(__always) private static func h(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ x: UInt32, _ s: UInt32) -> UInt32 {
        b &+ rotate(a &+ (b ^ c ^ d) &+ x, s)
    }
    @inline(__always) private static func i(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ x: UInt32, _ s: UInt32) -> UInt32 {
        b &+ rotate(a &+ (c ^ (b | ~d)) &+ x, s)
    }

    /// One 64-byte block, the four rounds of the RFC written out.
    private mutating func compress(_ block: UnsafeRawPointer) {
        func word(_ index: Int) -> UInt32 { UInt32(littleEndian: block.loadUnaligned(fromByteOffset: 4 * index, as: UInt32.self)) }
        let (w0, w1, w2, w3, w4, w5, w6, w7) = (word(0), word(1), word(2), word(3), word(4), word(5), word(6), word(7))
        let (w8, w9, w10, w11, w12, w13, w14, w15) = (word(8), word(9), word(10), word(11), word(12), word(13), word(14), word(15))
        var (a, b, c, d) = state
        a = Self.f(a, b, c, d, w0 &+ 0xD76A_A478, 7)
        d = Self.f(d, a, b, c, w1 &+ 0xE8C7_B756, 12)
        c = Self.f(c, d, a, b, w2 &+ 0x2420_70DB, 17)
        b = Self.f(b, c, d, a, w3 &+ 0xC1BD_CEEE, 22)
        a = Self.f(a, b, c, d, w4 &+ 0xF57C_0FAF, 7)
        d = Self.f(d, a, b, c, w5 &+ 0x4787_C62A, 12)
        c = Self.f(c, d, a, b, w6 &+ 0xA830_4613, 17)
        b = Self.f(b, c, d, a, w7 &+ 0xFD46_9501, 22)
        a = Self.f(a, b, c, d, w8 &+ 0x6980_98D8, 7)
        d = Self.f(d, a, b, c, w9 &+ 0x8B44_F7AF, 12)
        c = Self.f(c, d, a, b, w10 &+ 0xFFFF_5BB1, 17)
        b = Self.f(b, c, d, a, w11 &+ 0x895C_D7BE, 22)
        a = Self.f(a, b, c, d, w12 &+ 0x6B90_1122, 7)
        d = Self.f(d, a, b, c, w13 &+ 0xFD98_7193, 12)
        c = Self.f(c, d, a, b, w14 &+ 0xA679_438E, 17)
        b = Self.f(b, c, d, a, w15 &+ 0x49B4_0821, 22)
        a = Self.g(a, b, c, d, w1 &+ 0xF61E_2562, 5)
        d = Self.g(d, a, b, c, w6 &+ 0xC040_B340, 9)
        c = Self.g(c, d, a, b, w11 &+ 0x265E_5A51, 14)
        b = Self.g(b, c, d, a, w0 &+ 0xE9B6_C7AA, 20)
        a = Self.g(a, b, c, d, w5 &+ 0xD62F_105D, 5)
        d = Self.g(d, a, b, c, w10 &+ 0x0244_1453, 9)
        c = Self.g(c, d, a, b, w15 &+ 0xD8A1_E681, 14)
        b = Self.g(b, c, d, a, w4 &+ 0xE7D3_FBC8, 20)
        a = Self.g(a, b, c, d, w9 &+ 0x21E1_CDE6, 5)
        d = Self.g(d, a, b, c, w14 &+ 0xC337_07D6, 9)
        c = Self.g(c, d, a, b, w3 &+ 0xF4D5_0D87, 14)
        b = Self.g(b, c, d, a, w8 &+ 0x455A_14ED, 20)
        a = Self.g(a, b, c, d, w13 &+ 0xA9E3_E905, 5)
        d = Self.g(d, a, b, c, w2 &+ 0xFCEF_A3F8, 9)
        c = Self.g(c, d, a, b, w7 &+ 0x676F_02D9, 14)
        b = Self.g(b, c, d, a, w12 &+ 0x8D2A_4C8A, 20)
        a = Self.h(a, b, c, d, w5 &+ 0xFFFA_3942, 4)
        d = Self.h(d, a, b, c, w8 &+ 0x8771_F681, 11)
        c = Self.h(c, d, a, b, w11 &+ 0x6D9D_6122, 16)
        b = Self.h(b, c, d, a, w14 &+ 0xFDE5_380C, 23)
        a = Self.h(a, b, c, d, w1 &+ 0xA4BE_EA44, 4)
        d = Self.h(d, a, b, c, w4 &+ 0x4BDE_CFA9, 11)
        c = Self.h(c, d, a, b, w7 &+ 0xF6BB_4B60, 16)
        b = Self.h(b, c, d, a, w10 &+ 0xBEBF_BC70, 23)
        a = Self.h(a, b, c, d, w13 &+ 0x289B_7EC6, 4)
        d = Self.h(d, a, b, c, w0 &+ 0xEAA1_27FA, 11)
        c = Self.h(c, d, a, b, w3 &+ 0xD4EF_3085, 16)
        b = Self.h(b, c, d, a, w6 &+ 0x0488_1D05, 23)
        a = Self.h(a, b, c, d, w9 &+ 0xD9D4_D039, 4)
        d = Self.h(d, a, b, c, w12 &+ 0xE6DB_99E5, 11)
        c = Self.h(c, d, a, b, w15 &+ 0x1FA2_7CF8, 16)
        b = Self.h(b, c, d, a, w2 &+ 0xC4AC_5665, 23)
        a = Self.i(a, b, c, d, w0 &+ 0xF429_2244, 6)
        d = Self.i(d, a, b, c, w7 &+ 0x432A_FF97, 10)
        c = Self.i(c, d, a, b, w14 &+ 0xAB94_23A7, 15)
        b = Self.i(b, c, d, a, w5 &+ 0xFC93_A039, 21)
        a = Self.i(a, b, c, d, w12 &+ 0x655B_59C3, 6)
        d = Self.i(d, a, b, c, w3 &+ 0x8F0C_CC92, 10)
        c = Self.i(c, d, a, b, w10 &+ 0xFFEF_F47D, 15)
        b = Self.i(b, c, d, a, w1 &+ 0x8584_5DD1, 21)
        a = Self.i(a, b, c, d, w8 &+ 0x6FA8_7E4F, 6)
        d = Self.i(d, a, b, c, w15 &+ 0xFE2C_E6E0, 10)
        c = Self.i(c, d, a, b, w6 &+ 0xA301_4314, 15)
        b = Self.i(b, c, d, a, w13 &+ 0x4E08_11A1, 21)
        a = Self.i(a, b, c, d, w4 &+ 0xF753_7E82, 6)
        d = Self.i(d, a, b, c, w11 &+ 0xBD3A_F235, 10)
        c = Self.i(c, d, a, b, w2 &+ 0x2AD7_D2BB, 15)
        b = Self.i(b, c, d, a, w9 &+ 0xEB86_D391, 21)
        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d)
    }
}
