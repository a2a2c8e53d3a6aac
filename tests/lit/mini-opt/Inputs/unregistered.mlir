"nodialect.op"() : () -> ()
