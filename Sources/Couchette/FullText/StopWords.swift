/// Stop words per language: words too common to be worth indexing or searching for. They are
/// dropped from documents and search strings alike (they still count as positions, so a phrase
/// around one still needs the gap).
///
/// The lists follow the Snowball project's stop word lists (snowballstem.org, BSD licence), for
/// the languages listed here; other languages get stemming without stop words.
enum StopWords {
    /// The stop words of a libstemmer algorithm name or ISO-639 code; empty when there is no list.
    static func words(for algorithm: String?) -> Set<String> {
        switch algorithm {
        case "en", "eng", "english", "porter": english
        case "fr", "fre", "fra", "french": french
        case "de", "ger", "deu", "german": german
        case "es", "spa", "spanish": spanish
        default: []
        }
    }

    private static func list(_ text: String) -> Set<String> {
        Set(text.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init))
    }

    static let english = list(
        """
        i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers
        herself it its itself they them their theirs themselves what which who whom this that these those am is
        are was were be been being have has had having do does did doing would should could ought i'm you're
        he's she's it's we're they're i've you've we've they've i'd you'd he'd she'd we'd they'd i'll you'll
        he'll she'll we'll they'll isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't won't
        wouldn't shan't shouldn't can't cannot couldn't mustn't let's that's who's what's here's there's when's
        where's why's how's a an the and but if or because as until while of at by for with about against
        between into through during before after above below to from up down in out on off over under again
        further then once here there when where why how all any both each few more most other some such no nor
        not only own same so than too very
        """)

    static let french = list(
        """
        au aux avec ce ces dans de des du elle en et eux il je la le leur lui ma mais me même mes moi mon ne nos
        notre nous on ou par pas pour qu que qui sa se ses son sur ta te tes toi ton tu un une vos votre vous c d
        j l à m n s t y été étée étées étés étant suis es est sommes êtes sont serai seras sera serons serez
        seront serais serait serions seriez seraient étais était étions étiez étaient fus fut fûmes fûtes furent
        sois soit soyons soyez soient fusse fusses fût fussions fussiez fussent ayant eu eue eues eus ai as avons
        avez ont aurai auras aura aurons aurez auront aurais aurait aurions auriez auraient avais avait avions
        aviez avaient eut eûmes eûtes eurent aie aies ait ayons ayez aient eusse eusses eût eussions eussiez
        eussent ceci cela celà cet cette ici ils les leurs quel quels quelle quelles sans soi
        """)

    static let german = list(
        """
        aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes anderm
        andern anderr anders auch auf aus bei bin bis bist da damit dann der den des dem die das dass daß
        derselbe derselben denselben desselben demselben dieselbe dieselben dasselbe dazu dein deine deinem
        deinen deiner deines denn derer dessen dich dir du dies diese diesem diesen dieser dieses doch dort durch
        ein eine einem einen einer eines einig einige einigem einigen einiger einiges einmal er ihn ihm es etwas
        euer eure eurem euren eurer eures für gegen gewesen hab habe haben hat hatte hatten hier hin hinter ich
        mich mir ihr ihre ihrem ihren ihrer ihres euch im in indem ins ist jede jedem jeden jeder jedes jene
        jenem jenen jener jenes jetzt kann kein keine keinem keinen keiner keines können könnte machen man manche
        manchem manchen mancher manches mein meine meinem meinen meiner meines mit muss musste nach nicht nichts
        noch nun nur ob oder ohne sehr sein seine seinem seinen seiner seines selbst sich sie ihnen sind so
        solche solchem solchen solcher solches soll sollte sondern sonst über um und uns unsere unserem unseren
        unser unseres unter viel vom von vor während war waren warst was weg weil weiter welche welchem welchen
        welcher welches wenn werde werden wie wieder will wir wird wirst wo wollen wollte würde würden zu zum zur
        zwar zwischen
        """)

    static let spanish = list(
        """
        de la que el en y a los del se las por un para con no una su al lo como más pero sus le ya o este sí
        porque esta entre cuando muy sin sobre también me hasta hay donde quien desde todo nos durante todos uno
        les ni contra otros ese eso ante ellos e esto mí antes algunos qué unos yo otro otras otra él tanto esa
        estos mucho quienes nada muchos cual poco ella estar estas algunas algo nosotros mi mis tú te ti tu tus
        ellas nosotras vosotros vosotras os mío mía míos mías tuyo tuya tuyos tuyas suyo suya suyos suyas nuestro
        nuestra nuestros nuestras vuestro vuestra vuestros vuestras esos esas estoy estás está estamos estáis
        están esté estés estemos estéis estén estaré era eras éramos erais eran fue fueron es son soy eres somos
        sois ser sea he has ha hemos habéis han haya había
        """)
}
