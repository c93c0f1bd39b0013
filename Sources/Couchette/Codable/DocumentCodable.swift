/// A class that can be saved as a document: ``Collection/save(from:)``, ``Collection/delete(for:)``,
/// ``Collection/purge(for:)``, ``Batch/save(from:in:concurrencyControl:)``.
public typealias DocumentEncodable = Encodable & AnyObject
/// A class that can be read from a document: ``Collection/document(id:as:)``.
public typealias DocumentDecodable = Decodable & AnyObject
/// A class that can be both: what ``Collection/save(from:conflictHandler:)`` needs.
public typealias DocumentCodable = Codable & AnyObject
