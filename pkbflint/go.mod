module github.com/pkbf/pkbf/pkbflint

go 1.26

replace github.com/pkbf/pkbf => ../
