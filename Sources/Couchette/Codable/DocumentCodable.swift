/// A class that can be saved as a document: ``Collection/save(from:)``, ``Collection/delete(for:)``,
/// ``Collection/purge(for:)``, ``Batch/save(from:in:concurrencyControl:)``.
///
/// ```swift
/// final class Note: Codable {          // Codable & AnyObject: DocumentEncodable and DocumentDecodable
///     @DocumentID var id: String?
///     var text = ""
/// }
/// try await notes.save(from: Note())
/// ```
public typealias DocumentEncodable = Encodable & AnyObject
/// A class that can be read from a document: ``Collection/document(id:as:)``.
///
/// ```swift
/// let note = try await notes.document(id: "note-1", as: Note.self)
/// ```
public typealias DocumentDecodable = Decodable & AnyObject
/// A class that can be both: what ``Collection/save(from:conflictHandler:)`` needs.
///
/// ```swift
/// try await notes.save(from: edited) { mine, stored in     // both sides decoded as Note
///     mine.text = (stored?.text ?? "") + "\n" + mine.text
///     return true
/// }
/// ```
public typealias DocumentCodable = Codable & AnyObject
