import Foundation

@testable import Couchette

// Models shared by the Codable test suites.

/// The seed's model (Couchbase Lite's `Task`, renamed so that Swift's `Task` stays visible).
class TodoTask: Codable {
    @DocumentID var id: String?
    var title: String
    var completed: Bool?

    init(title: String, completed: Bool? = nil) {
        self.title = title
        self.completed = completed
    }
}

/// A model that lists something, for the conflict tests.
final class Checklist: Codable {
    @DocumentID var id: String?
    var name: String
    var items: [String]

    init(id: String? = nil, name: String, items: [String] = []) {
        self.name = name
        self.items = items
        self.id = id
    }
}

/// A nested model with its own id.
final class Contact: Codable, Equatable {
    @DocumentID var id: String?
    var name: String
    var email: String?

    init(id: String? = nil, name: String, email: String? = nil) {
        self.name = name
        self.email = email
        self.id = id
    }

    static func == (lhs: Contact, rhs: Contact) -> Bool {
        lhs.id == rhs.id && lhs.name == rhs.name && lhs.email == rhs.email
    }
}

final class Person: Codable {
    @DocumentID var id: String?
    var name: String
    var contacts: [Contact]
    var best: Contact?
    var byRole: [String: Contact]

    init(id: String? = nil, name: String, contacts: [Contact] = [], best: Contact? = nil, byRole: [String: Contact] = [:]) {
        self.name = name
        self.contacts = contacts
        self.best = best
        self.byRole = byRole
        self.id = id
    }
}

/// A class that is Codable but not a document model: it has no `@DocumentID`.
final class NoIDModel: Codable {
    var name = "nameless"
}

/// Reads the hidden state of a model's `@DocumentID`.
func documentID(of model: AnyObject) throws -> DocumentID {
    try DocumentIDLocator.wrapper(in: model)
}

/// The revision a model object is bound to, or nil.
func boundRevision(of model: AnyObject) throws -> String? {
    try documentID(of: model).binding?.revisionID
}

/// Decodes `type` from JSON text through the document decoder (no JSON decoder involved: the
/// text is parsed into the stored binary format first).
func decodeStored<T: Decodable>(_ type: T.Type, json: String) throws -> T {
    try DocumentDecoder.decode(T.self, from: EncodedValue(bytes: try ValueEncoder.encode(try JSON.parse(json))))
}

/// Encodes a model as the document encoder does and returns the stored properties.
func storedProperties<T: Encodable & AnyObject>(of model: T) throws -> [String: Value] {
    guard case .dictionary(let entries) = try DocumentEncoder.encode(model).properties else { return [:] }
    return entries
}
