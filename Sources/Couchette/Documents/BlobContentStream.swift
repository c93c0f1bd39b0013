import Foundation

/// A blob's content as `Data` chunks of at most 256 KiB, read from disk as iteration asks for
/// them: memory stays bounded however large the blob is. Iterate it more than once to read the
/// content again.
///
/// ```swift
/// var total = 0
/// for try await chunk in blob.contentStream() { total += chunk.count }
/// ```
public struct BlobContentStream: AsyncSequence, Sendable {
    /// Each element is one chunk of the content, in order.
    public typealias Element = Data
    /// Reading fails with a ``CouchetteError`` when the content is missing or unreadable.
    public typealias Failure = any Error

    let blob: Blob

    /// Reads the chunks one by one, opening the content's file on the first call.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let blob: Blob
        var reader: BlobReader?
        var offset = 0
        var finished = false

        /// The next chunk, or nil after the last one.
        public mutating func next() async throws -> Data? {
            guard !finished else { return nil }
            // A blob made from data still has it: slice it; everything else is read from its file.
            if case .data(let data) = blob.source {
                guard offset < data.count else { finished = true; return nil }
                let end = Swift.min(offset + BlobStore.chunkSize, data.count)
                defer { offset = end }
                return data.subdata(in: offset..<end)
            }
            if reader == nil { reader = try blob.openReader() }
            guard let chunk = try reader?.next() else {
                finished = true
                return nil
            }
            return chunk
        }
    }

    /// A new iterator that reads the content from its start.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(blob: blob) }
}
