//! `#[derive(Bundle)]`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Fields, Member};

pub(crate) fn derive(input: &DeriveInput) -> syn::Result<TokenStream> {
    let name = &input.ident;
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "#[derive(Bundle)] takes a struct whose fields are components or #[bundle] nested bundles",
        ));
    };
    let fields: Vec<_> = match &data.fields {
        Fields::Named(named) => named.named.iter().collect(),
        Fields::Unnamed(unnamed) => unnamed.unnamed.iter().collect(),
        Fields::Unit => Vec::new(),
    };

    let bundle = quote!(::ecs_core::storage::bundle::Bundle);
    let module = quote!(::ecs_core::storage::bundle);
    let components = quote!(::ecs_core::storage::component::Components);
    let mut predicates = Vec::new();
    let mut members = Vec::new();
    let mut bindings = Vec::new();
    let mut register = Vec::new();
    let mut ids = Vec::new();
    let mut writes = Vec::new();
    let mut reads = Vec::new();
    // The index of the field's first column: a constant expression.
    let mut offset = quote!(0usize);
    for (index, field) in fields.iter().enumerate() {
        // Every field is a bundle: a component is a bundle of one, and
        // tuples and derived bundles flatten. `#[bundle]` is still accepted
        // (it was once needed to mark a nested bundle) and changes nothing.
        for attr in field.attrs.iter().filter(|a| a.path().is_ident("bundle")) {
            attr.meta.require_path_only()?;
        }
        let member = match &field.ident {
            Some(ident) => Member::Named(ident.clone()),
            None => Member::Unnamed(index.into()),
        };
        let binding = format_ident!("__field{}", index);
        let ty = &field.ty;
        predicates.push(quote!(#ty: #bundle));
        register.push(quote!(<#ty as #bundle>::register_components(__components, __ids);));
        ids.push(quote!(<#ty as #bundle>::component_ids(__components, __ids)?;));
        // SAFETY (of the generated call): the caller's columns
        // `#offset..#end` are this field's, in its own order, because
        // `register_components` lists them there.
        let end = quote!(#offset + <#ty as #bundle>::COMPONENT_COUNT);
        writes.push(quote! {
            unsafe { <#ty as #bundle>::write(#binding, &__columns[#offset..#end], __row) };
        });
        reads.push(quote! {
            #member: unsafe { <#ty as #bundle>::read(&__columns[#offset..#end], __row) }
        });
        offset = end;
        members.push(member);
        bindings.push(binding);
    }

    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let mut where_clause = where_clause.cloned().unwrap_or_else(|| syn::parse_quote!(where));
    // Generic bundles need their fields' bounds; concrete ones get the
    // compiler's own error at the field's use instead.
    if input.generics.type_params().next().is_some() || input.generics.const_params().next().is_some() {
        for predicate in &predicates {
            where_clause.predicates.push(syn::parse_quote!(#predicate));
        }
    }

    // SAFETY (of the generated impl): `register_components` and
    // `component_ids` list the fields' components in declaration order, a
    // nested bundle's in its own order in its place, and `COMPONENT_COUNT`
    // counts them. `write` moves each field to the columns at the same
    // positions (a component to `columns[offset]`, a nested bundle to the
    // sub-slice starting at its offset, whose length its count gives);
    // `read` moves each back out from the same positions. The offsets are
    // the running sum of the counts of the fields before, so the two sides
    // agree by construction; the caller's contract (columns of these types,
    // in this order, at `row`) is forwarded unchanged.
    Ok(quote! {
        unsafe impl #impl_generics #bundle for #name #ty_generics #where_clause {
            const COMPONENT_COUNT: usize = #offset;

            fn register_components(__components: &mut #components, __ids: &mut #module::BundleIds) {
                const {
                    ::core::assert!(
                        <Self as #bundle>::COMPONENT_COUNT <= #module::MAX_BUNDLE_COMPONENTS,
                        "a bundle holds at most ecs_core::storage::bundle::MAX_BUNDLE_COMPONENTS components",
                    )
                };
                #(#register)*
            }

            fn component_ids(
                __components: &#components,
                __ids: &mut #module::BundleIds,
            ) -> ::core::result::Result<(), &'static str> {
                #(#ids)*
                ::core::result::Result::Ok(())
            }

            #[inline]
            unsafe fn write(self, __columns: &[*mut u8], __row: usize) {
                ::core::debug_assert_eq!(__columns.len(), <Self as #bundle>::COMPONENT_COUNT);
                let #name { #(#members: #bindings),* } = self;
                #(#writes)*
            }

            #[inline]
            unsafe fn read(__columns: &[*mut u8], __row: usize) -> Self {
                ::core::debug_assert_eq!(__columns.len(), <Self as #bundle>::COMPONENT_COUNT);
                #name { #(#reads),* }
            }
        }
    })
}
