//! `#[derive(Component)]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let mut where_clause = where_clause.cloned().unwrap_or_else(|| syn::parse_quote!(where));
    // The trait's supertraits, as a bound, so a generic type is a component
    // wherever its parameters make it `Send + Sync + 'static`.
    where_clause.predicates.push(syn::parse_quote!(Self: ::core::marker::Send + ::core::marker::Sync + 'static));
    quote! {
        impl #impl_generics ::ecs_core::storage::component::Component for #name #ty_generics #where_clause {}
    }
}
