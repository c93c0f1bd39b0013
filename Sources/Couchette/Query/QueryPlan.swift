/// A compiled query: everything ``Executor`` needs, built once by ``QueryCompiler`` and reused by
/// every execution.
///
/// A class, not a struct: every execution, its sink and its closures share the one plan by
/// reference. As a struct of some twenty arrays and closures, each copy retained every field and
/// released it again: about an eighth of the time of a prepared point lookup.
final class QueryPlan: Sendable {
    /// FROM, JOIN and UNNEST sources in order; index 0 is the main (FROM) collection.
    let sources: [SourcePlan]
    /// How the main collection's documents are found (a full scan, or indexes chosen at run time).
    let mainScan: any DocumentScan
    /// JOINs and UNNESTs, applied in order to each row of the main scan.
    let stages: [Stage]
    /// The WHERE conjuncts that read only the main document, applied before the stages (with
    /// JOINs or UNNESTs only); ``filter`` holds the others.
    let mainFilter: Evaluator?
    let filter: Evaluator?
    /// Conjuncts of the WHERE a full scan of the main collection tries on each stored body in
    /// place, before copying the record (``BodyPrecheck``).
    let precheck: BodyPrecheck?
    /// The columns computed from each fetched document where it lies, when every column is a
    /// path of the one FROM document (see ``InPlaceProjection``); nil otherwise.
    let inPlace: InPlaceProjection?
    let groupKeys: [Evaluator]
    let aggregates: [AggregatePlan]
    /// True with GROUP BY or any aggregate: rows are folded into groups before projection.
    let isAggregating: Bool
    let having: Evaluator?
    let columns: [Evaluator]
    let columnNames: [String]
    let order: [OrderKey]
    let distinct: Bool
    let limit: Evaluator?
    let offset: Evaluator?
    let parameterNames: Set<String>
    /// The parameters by slot (``EvaluationContext/parameterValues``).
    let parameterOrder: [String]
    let variableCount: Int

    init(
        sources: [SourcePlan], mainScan: any DocumentScan, stages: [Stage], mainFilter: Evaluator?, filter: Evaluator?,
        precheck: BodyPrecheck?, inPlace: InPlaceProjection?, groupKeys: [Evaluator], aggregates: [AggregatePlan], isAggregating: Bool,
        having: Evaluator?,
        columns: [Evaluator],
        columnNames: [String], order: [OrderKey], distinct: Bool, limit: Evaluator?, offset: Evaluator?,
        parameterNames: Set<String>, parameterOrder: [String], variableCount: Int
    ) {
        self.sources = sources
        self.mainScan = mainScan
        self.stages = stages
        self.mainFilter = mainFilter
        self.filter = filter
        self.precheck = precheck
        self.inPlace = inPlace
        self.groupKeys = groupKeys
        self.aggregates = aggregates
        self.isAggregating = isAggregating
        self.having = having
        self.columns = columns
        self.columnNames = columnNames
        self.order = order
        self.distinct = distinct
        self.limit = limit
        self.offset = offset
        self.parameterNames = parameterNames
        self.parameterOrder = parameterOrder
        self.variableCount = variableCount
    }

    /// The same plan reading the main collection through `scan` (the compiler's second step).
    func replacingMainScan(_ scan: any DocumentScan) -> QueryPlan {
        QueryPlan(
            sources: sources, mainScan: scan, stages: stages, mainFilter: mainFilter, filter: filter, precheck: precheck, inPlace: inPlace,
            groupKeys: groupKeys, aggregates: aggregates, isAggregating: isAggregating, having: having, columns: columns,
            columnNames: columnNames,
            order: order, distinct: distinct, limit: limit, offset: offset, parameterNames: parameterNames,
            parameterOrder: parameterOrder, variableCount: variableCount)
    }
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
    /// The equality is the whole ON clause and its inner side is `META(joined).id`: a document
    /// the key lookup finds has exactly the outer string as its id, so ON holds for it without
    /// being evaluated again.
    var lookupDecidesOn = false
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
