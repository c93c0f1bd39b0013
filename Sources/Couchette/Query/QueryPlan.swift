/// A compiled query: everything ``Executor`` needs, built once by ``QueryCompiler`` and reused by
/// every execution.
struct QueryPlan: Sendable {
    /// FROM, JOIN and UNNEST sources in order; index 0 is the main (FROM) collection.
    var sources: [SourcePlan]
    /// How the main collection's documents are found (a full scan, or indexes chosen at run time).
    var mainScan: any DocumentScan
    /// JOINs and UNNESTs, applied in order to each row of the main scan.
    var stages: [Stage]
    /// The WHERE conjuncts that read only the main document, applied before the stages (with
    /// JOINs or UNNESTs only); ``filter`` holds the others.
    var mainFilter: Evaluator?
    var filter: Evaluator?
    var groupKeys: [Evaluator]
    var aggregates: [AggregatePlan]
    /// True with GROUP BY or any aggregate: rows are folded into groups before projection.
    var isAggregating: Bool
    var having: Evaluator?
    var columns: [Evaluator]
    var columnNames: [String]
    var order: [OrderKey]
    var distinct: Bool
    var limit: Evaluator?
    var offset: Evaluator?
    var parameterNames: Set<String>
    var variableCount: Int
}

struct SourcePlan: Sendable {
    enum Kind: Sendable {
        case collection(CollectionSpec)
        case unnest
    }
    var kind: Kind
    /// The name paths use to refer to this source (alias, else the collection's name).
    var alias: String
    /// The result column name of `*` or `alias.*`.
    var columnName: String
    var hasExplicitAlias: Bool
    /// Deleted documents are visible only when the query reads `META(alias).deleted`.
    var includeDeleted = false
}

enum Stage: Sendable {
    /// A JOIN: `hash` holds the two sides of an equality in ON (left side over earlier sources,
    /// right side over the joined one) when there is one, so matches are found by hashing.
    case join(JoinClause.Kind, source: Int, scan: any DocumentScan, on: Evaluator?, hash: HashCondition?)
    case unnest(source: Int, Evaluator)
}

struct HashCondition: Sendable {
    var outer: Evaluator
    var inner: Evaluator
    /// The inner side is `META(joined).id`: matches are looked up by document key instead of
    /// reading and hashing the whole joined collection.
    var innerIsDocumentID = false
    /// The inner side's canonical key (``ExpressionKey``): when a built index of the joined
    /// collection has it as its first column, each outer row probes that index instead
    /// (``IndexJoin``).
    var innerKey: String?
}

struct OrderKey: Sendable {
    var evaluator: Evaluator
    var descending: Bool
    var collation: Collation
    /// The result column computing the same path, whose value the key takes.
    var column: Int?
}

enum AggregateKind: String, Sendable {
    case count = "COUNT", sum = "SUM", avg = "AVG", min = "MIN", max = "MAX", arrayAgg = "ARRAY_AGG"
}

struct AggregatePlan: Sendable {
    var kind: AggregateKind
    /// nil for `COUNT(*)`.
    var argument: Evaluator?
    var distinct: Bool
}
